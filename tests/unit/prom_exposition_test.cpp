// Percentiles of the log2 histograms, interval deltas, INTERVAL/COUNT parsing, the Prometheus exposition and the
// small HTTP server of kvio trace --listen.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <regex>
#include <string>

#include "common/error.h"
#include "common/histogram.h"
#include "trace/http_server.h"
#include "trace/prom_exposition.h"
#include "trace/trace_positionals.h"
#include "trace/trace_report.h"

using namespace kvio;
using namespace kvio::trace;

namespace {

constexpr uint32_t kDev = KVIO_MKDEV(4095, 79);  // no such disk: labelled "4095:79"

kvio_hist log2_hist(std::initializer_list<std::pair<unsigned, uint64_t>> slots) {
    kvio_hist h{};
    for (auto [k, n] : slots) {
        h.slots[k] = n;
        if (k) h.sum += n * ((uint64_t(1) << (k - 1)) + (uint64_t(1) << k)) / 2;  // slot 0 holds value 0
    }
    return h;
}

TEST(Percentiles, InterpolatedInsideTheBucketWithItsBounds) {
    Histogram h(HistKind::Log2, "ns", 128);
    h.add(10'000, 90);   // slot 14: [8192, 16384)
    h.add(100'000, 10);  // slot 17: [65536, 131072)
    auto j = h.percentiles_json();
    EXPECT_EQ(j["p50"]["bucket"], nlohmann::json::parse("[8192,16384]"));
    EXPECT_DOUBLE_EQ(j["p50"]["value"].get<double>(), 8192 + 50.0 / 90 * 8192);
    EXPECT_EQ(j["p90"]["bucket"], nlohmann::json::parse("[8192,16384]"));
    EXPECT_EQ(j["p99"]["bucket"], nlohmann::json::parse("[65536,131072]"));
    EXPECT_DOUBLE_EQ(j["p99"]["value"].get<double>(), 65536 + 0.9 * 65536);
    EXPECT_EQ(j["p99.9"]["bucket"], nlohmann::json::parse("[65536,131072]"));
    EXPECT_TRUE(Histogram(HistKind::Log2, "ns", 128).percentiles_json().empty());
}

TEST(Percentiles, MinusGivesTheIntervalsValues) {
    Histogram before(HistKind::Log2, "ns", 128), after(HistKind::Log2, "ns", 128);
    before.add(1000, 5);
    after.add(1000, 5);
    after.add(50'000, 3);
    Histogram d = after.minus(before);
    EXPECT_EQ(d.count(), 3u);
    EXPECT_EQ(d.sum(), 150'000u);
    EXPECT_EQ(d.slot(log2_slot(50'000)), 3u);
    EXPECT_EQ(d.slot(log2_slot(1000)), 0u);
    EXPECT_THROW(after.minus(Histogram(HistKind::Linear, "cmds", 128)), std::invalid_argument);

    TraceReport r0(1 << 30), r1(1 << 30);
    r0.add_dev_hist({kDev, KVIO_H_D2C_WRITE, 0}, log2_hist({{14, 4}}));
    r1.add_dev_hist({kDev, KVIO_H_D2C_WRITE, 0}, log2_hist({{14, 4}, {15, 2}}));
    auto delta = r1.minus(r0);
    EXPECT_EQ(delta.devices().at(kDev).at("d2c_write").count(), 2u);
}

TEST(TracePositionals, IntervalCountAndCommandAreToldApart) {
    auto p = split_trace_positionals({"1", "5"}, false);
    EXPECT_EQ(p.interval_s, 1);
    EXPECT_EQ(p.count, 5u);
    EXPECT_TRUE(p.command.empty());
    p = split_trace_positionals({"0.5", "--", "sleep", "1"}, false);
    EXPECT_EQ(p.interval_s, 0.5);
    EXPECT_EQ(p.count, 0u);
    EXPECT_EQ(p.command, (std::vector<std::string>{"sleep", "1"}));
    p = split_trace_positionals({"2", "3", "--", "fio", "job.ini"}, false);
    EXPECT_EQ(p.count, 3u);
    EXPECT_EQ(p.command, (std::vector<std::string>{"fio", "job.ini"}));
    // `kvio trace -- sleep 1`: CLI11 consumed the "--", every word is the command
    p = split_trace_positionals({"sleep", "1"}, true);
    EXPECT_EQ(p.interval_s, 0);
    EXPECT_EQ(p.command, (std::vector<std::string>{"sleep", "1"}));
    p = split_trace_positionals({"1"}, true);
    EXPECT_EQ(p.interval_s, 0);
    EXPECT_EQ(p.command, (std::vector<std::string>{"1"}));
    p = split_trace_positionals({"sleep", "1"}, false);  // no "--": a command name is not a number
    EXPECT_EQ(p.interval_s, 0);
    EXPECT_EQ(p.command.size(), 2u);
    EXPECT_THROW(split_trace_positionals({"0"}, false), Error);
    EXPECT_THROW(split_trace_positionals({"-1"}, false), Error);
    EXPECT_THROW(split_trace_positionals({"1", "2.5"}, false), Error);
    EXPECT_THROW(split_trace_positionals({"1", "0"}, false), Error);
    EXPECT_THROW(split_trace_positionals({"nan"}, false), Error);
    // `kvio trace 1 3 -d loop1`: an option after the positionals is refused, not run as a command named "-d"
    EXPECT_THROW(split_trace_positionals({"1", "3", "-d", "loop1"}, false), Error);
    EXPECT_THROW(split_trace_positionals({"--device", "loop1"}, false), Error);
    // `kvio trace -d loop0 1 2 3` ran "3" as a program: a word after INTERVAL [COUNT] needs "--"
    try {
        split_trace_positionals({"1", "2", "3"}, false);
        ADD_FAILURE() << "a third number was taken as a command";
    } catch (const UsageError& e) {
        EXPECT_NE(std::string(e.what()).find("'3' after INTERVAL COUNT: a COMMAND after them needs --"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_THROW(split_trace_positionals({"1", "sleep", "3"}, false), UsageError);
    p = split_trace_positionals({"1", "--", "-x"}, false);  // after "--" it is COMMAND
    EXPECT_EQ(p.command, (std::vector<std::string>{"-x"}));
    p = split_trace_positionals({"-x"}, true);
    EXPECT_EQ(p.command, (std::vector<std::string>{"-x"}));
    p = split_trace_positionals({"dd", "-x"}, false);  // a command's own options stay its own
    EXPECT_EQ(p.command, (std::vector<std::string>{"dd", "-x"}));
}

TraceSnapshot sample_snapshot() {
    TraceSnapshot s(1 << 30);
    kvio_hist size{};
    size.slots[18] = 64;  // 64 x 128 KiB writes
    size.sum = 64 * 131072;
    s.report.add_dev_hist({kDev, KVIO_H_BSSPLIT_WRITE, 0}, size);
    s.report.add_dev_hist({kDev, KVIO_H_D2C_WRITE, 0}, log2_hist({{14, 60}, {17, 4}}));
    kvio_hist qd{};
    qd.slots[1] = 60;
    qd.slots[127] = 4;  // overflow slot: only in +Inf
    qd.sum = 60 + 4 * 200;
    s.report.add_dev_hist({kDev, KVIO_H_QD_WRITE, 0}, qd);
    s.report.add_proc_hist(KVIO_H_FSYNC, log2_hist({{20, 1}}));
    s.report.add_dev_hist({kDev, KVIO_H_OTHER_CMDS, 0}, log2_hist({{0, 3}}));  // 3 other commands, 2 of them flushes
    s.report.add_dev_hist({kDev, KVIO_H_FLUSH_CMDS, 0}, log2_hist({{0, 2}}));
    s.report.add_dev_hist({kDev, KVIO_H_FAILED_WRITE, 0}, log2_hist({{18, 1}}));  // 1 of the writes failed
    s.counters[KVIO_CNT_RB_DROPS] = 3;
    s.stats_on = true;
    s.progs = {{"block_rq_issue_btf", 64, 64000}};
    return s;
}

/// The value of the sample `line_prefix` (name and labels), NAN when absent.
double sample(const std::string& text, const std::string& line_prefix) {
    auto at = text.find("\n" + line_prefix + " ");
    if (at == std::string::npos) return NAN;
    return std::stod(text.substr(at + line_prefix.size() + 2));
}

TEST(PromExposition, TextFormatNamesUnitsAndCumulativeBuckets) {
    std::string t = render_metrics(sample_snapshot(), ExpositionFormat::Text);
    const std::string dev = "device=\"4095:79\"";
    EXPECT_EQ(sample(t, "kvio_device_commands_total{" + dev + ",op=\"write\"}"), 64);
    EXPECT_EQ(sample(t, "kvio_device_commands_total{" + dev + ",op=\"read\"}"), 0);
    EXPECT_EQ(sample(t, "kvio_device_commands_total{" + dev + ",op=\"flush\"}"), 2);
    EXPECT_EQ(sample(t, "kvio_device_commands_total{" + dev + ",op=\"discard\"}"), 0);
    EXPECT_EQ(sample(t, "kvio_device_commands_total{" + dev + ",op=\"other\"}"), 1);
    EXPECT_EQ(sample(t, "kvio_device_bytes_total{" + dev + ",op=\"write\"}"), 64 * 131072);
    EXPECT_EQ(sample(t, "kvio_device_failed_commands_total{" + dev + ",op=\"write\"}"), 1);
    EXPECT_EQ(sample(t, "kvio_device_failed_commands_total{" + dev + ",op=\"read\"}"), 0);
    EXPECT_NE(t.find("# TYPE kvio_device_commands_total counter\n"), std::string::npos);
    EXPECT_NE(t.find("# TYPE kvio_d2c_seconds histogram\n"), std::string::npos);
    // slot 14 = [8192, 16384) ns -> le = 16383 ns; slot 17 -> le = 131071 ns
    EXPECT_EQ(sample(t, "kvio_d2c_seconds_bucket{" + dev + ",op=\"write\",le=\"1.6383e-05\"}"), 60);
    EXPECT_EQ(sample(t, "kvio_d2c_seconds_bucket{" + dev + ",op=\"write\",le=\"6.5535e-05\"}"), 60);
    EXPECT_EQ(sample(t, "kvio_d2c_seconds_bucket{" + dev + ",op=\"write\",le=\"0.000131071\"}"), 64);
    EXPECT_EQ(sample(t, "kvio_d2c_seconds_bucket{" + dev + ",op=\"write\",le=\"+Inf\"}"), 64);
    EXPECT_EQ(sample(t, "kvio_d2c_seconds_count{" + dev + ",op=\"write\"}"), 64);
    EXPECT_EQ(sample(t, "kvio_command_size_bytes_bucket{" + dev + ",op=\"write\",le=\"262143\"}"), 64);
    EXPECT_EQ(sample(t, "kvio_command_size_bytes_bucket{" + dev + ",op=\"write\",le=\"131071\"}"), 0);
    EXPECT_EQ(sample(t, "kvio_queue_depth_bucket{" + dev + ",op=\"write\",le=\"1\"}"), 60);
    EXPECT_EQ(sample(t, "kvio_queue_depth_bucket{" + dev + ",op=\"write\",le=\"126\"}"), 60);
    EXPECT_EQ(sample(t, "kvio_queue_depth_bucket{" + dev + ",op=\"write\",le=\"+Inf\"}"), 64);
    EXPECT_EQ(sample(t, "kvio_fsync_seconds_count"), 1);
    EXPECT_EQ(sample(t, "kvio_dropped_events_total"), 3);
    EXPECT_EQ(sample(t, "kvio_bpf_program_runs_total{program=\"block_rq_issue_btf\"}"), 64);
    EXPECT_DOUBLE_EQ(sample(t, "kvio_bpf_program_run_seconds_total{program=\"block_rq_issue_btf\"}"), 64e-6);
    EXPECT_EQ(t.find("# EOF"), std::string::npos);
    // every bucket series is cumulative: never smaller than the one before it
    std::regex b(R"(kvio_d2c_seconds_bucket\{device="4095:79",op="write",le="[^"]+"\} (\d+))");
    double prev = 0;
    for (std::sregex_iterator it(t.begin(), t.end(), b), end; it != end; ++it) {
        EXPECT_GE(std::stod((*it)[1]), prev);
        prev = std::stod((*it)[1]);
    }
}

TEST(PromExposition, OpenMetricsFamiliesAndEof) {
    std::string t = render_metrics(sample_snapshot(), ExpositionFormat::OpenMetrics);
    EXPECT_NE(t.find("# TYPE kvio_device_commands counter\n"), std::string::npos);  // family without _total
    EXPECT_NE(t.find("\nkvio_device_commands_total{"), std::string::npos);          // samples with it
    EXPECT_EQ(t.substr(t.size() - 6), "# EOF\n");
    EXPECT_EQ(negotiate_format("application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"),
              ExpositionFormat::OpenMetrics);
    EXPECT_EQ(negotiate_format("text/plain"), ExpositionFormat::Text);
    EXPECT_EQ(negotiate_format(""), ExpositionFormat::Text);
}

TEST(PromExposition, QueueDepthHelpSaysWhenTheDepthIsSampled) {
    const std::string exact_help =
        "# HELP kvio_queue_depth Commands in flight on the device at each dispatch, this one included.\n";
    TraceSnapshot s = sample_snapshot();
    std::string t = render_metrics(s, ExpositionFormat::Text);
    EXPECT_NE(t.find(exact_help), std::string::npos) << t;
    s.report.set_qd_sample_every(16);
    t = render_metrics(s, ExpositionFormat::Text);
    EXPECT_EQ(t.find(exact_help), std::string::npos);
    EXPECT_NE(t.find("# HELP kvio_queue_depth Commands in flight on the device at each dispatch, this one included. "
                     "[depth sampled at 1 issue in 16, each sample counted 16 times]\n"),
              std::string::npos)
        << t;
    EXPECT_EQ(s.report.to_json(1, s.counters, false)["qd_sample_every"], 16);
    EXPECT_EQ(sample_snapshot().report.to_json(1, s.counters, false)["qd_sample_every"], 1);
}

uint64_t mono_ns() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

/// Sends `request` to the server on `port`, servicing it in between, and returns the whole response.
std::string exchange(HttpServer& srv, int port, const std::string& request) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(send(fd, request.data(), request.size(), 0), ssize_t(request.size()));
    std::string out;
    char buf[4096];
    for (int i = 0; i < 200; ++i) {
        std::vector<pollfd> fds;
        srv.add_poll_fds(fds);
        poll(fds.data(), fds.size(), 10);
        srv.service(mono_ns());
        ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n > 0) out.append(buf, size_t(n));
        if (n == 0) break;
    }
    close(fd);
    return out;
}

TEST(HttpServer, AnswersGetHeadAndRefusesTheRest) {
    std::string seen_accept;
    HttpServer srv("127.0.0.1:0", [&](const HttpRequest& r) {
        seen_accept = r.accept;
        if (r.path != "/metrics") return HttpResponse{404, "text/plain", "no\n"};
        return HttpResponse{200, "text/plain; version=0.0.4", std::string(300000, 'x')};  // larger than a socket buffer
    });
    std::smatch m;
    const std::string bound = srv.bound();
    ASSERT_TRUE(std::regex_match(bound, m, std::regex(R"(127\.0\.0\.1:(\d+))"))) << bound;
    int port = std::stoi(m[1]);
    auto r =
        exchange(srv, port, "GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\nAccept: application/openmetrics-text\r\n\r\n");
    EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r.substr(0, 200);
    EXPECT_NE(r.find("Content-Length: 300000\r\n"), std::string::npos);
    EXPECT_EQ(r.size() - r.find("\r\n\r\n") - 4, 300000u);
    EXPECT_EQ(seen_accept, "application/openmetrics-text");
    r = exchange(srv, port, "HEAD /metrics HTTP/1.1\r\n\r\n");
    EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u);
    EXPECT_EQ(r.substr(r.size() - 4), "\r\n\r\n");  // headers only
    EXPECT_EQ(exchange(srv, port, "GET /x HTTP/1.0\r\n\r\n").rfind("HTTP/1.1 404", 0), 0u);
    EXPECT_EQ(exchange(srv, port, "POST /metrics HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 405", 0), 0u);
    EXPECT_EQ(exchange(srv, port, "nonsense\r\n\r\n").rfind("HTTP/1.1 400", 0), 0u);
    EXPECT_EQ(
        exchange(srv, port, "GET / HTTP/1.1\r\nX: " + std::string(20000, 'a') + "\r\n\r\n").rfind("HTTP/1.1 431", 0),
        0u);
}

TEST(HttpServer, AddressesAreCheckedBeforeListening) {
    EXPECT_EQ(split_host_port("127.0.0.1:9435"), (std::pair<std::string, std::string>{"127.0.0.1", "9435"}));
    EXPECT_EQ(split_host_port("[::1]:80"), (std::pair<std::string, std::string>{"::1", "80"}));
    // No address: loopback only (an exporter on every address is asked for by name)
    EXPECT_EQ(split_host_port(":9435"), (std::pair<std::string, std::string>{"127.0.0.1", "9435"}));
    EXPECT_EQ(split_host_port("9435"), (std::pair<std::string, std::string>{"127.0.0.1", "9435"}));
    EXPECT_EQ(split_host_port("0.0.0.0:9435"), (std::pair<std::string, std::string>{"0.0.0.0", "9435"}));
    EXPECT_EQ(HttpServer(":0", [](const HttpRequest&) { return HttpResponse{}; }).bound().rfind("127.0.0.1:", 0), 0u);
    EXPECT_EQ(HttpServer("0", [](const HttpRequest&) { return HttpResponse{}; }).bound().rfind("127.0.0.1:", 0), 0u);
    EXPECT_EQ(HttpServer("0.0.0.0:0", [](const HttpRequest&) { return HttpResponse{}; }).bound().rfind("0.0.0.0:", 0),
              0u);
    EXPECT_THROW(split_host_port("x9435"), Error);
    EXPECT_THROW(split_host_port("127.0.0.1:"), Error);
    EXPECT_THROW(split_host_port("127.0.0.1:70000"), Error);
    EXPECT_THROW(split_host_port("::1:80"), Error);
    HttpServer a("127.0.0.1:0", [](const HttpRequest&) { return HttpResponse{}; });
    EXPECT_THROW(HttpServer(a.bound(), [](const HttpRequest&) { return HttpResponse{}; }), Error);  // in use
}

TEST(HttpServer, ParserReadsRequestLineAndAccept) {
    HttpRequest r;
    ASSERT_TRUE(parse_http_request("GET /metrics?a=b HTTP/1.1\r\nHost: x\r\naCCept:  text/plain \r\n", r));
    EXPECT_EQ(r.method, "GET");
    EXPECT_EQ(r.path, "/metrics");
    EXPECT_EQ(r.accept, "text/plain");
    ASSERT_TRUE(parse_http_request("HEAD / HTTP/1.0\nAccept:a", r));  // LF only; fields of the last call reset
    EXPECT_EQ(r.method, "HEAD");
    EXPECT_EQ(r.accept, "a");
    EXPECT_FALSE(parse_http_request("", r));
    EXPECT_FALSE(parse_http_request("GET /", r));
    EXPECT_FALSE(parse_http_request("GET / HTTP/2", r));
    EXPECT_FALSE(parse_http_request("GET / HTTP/1.1 extra", r));
    EXPECT_FALSE(parse_http_request(std::string_view("\0\0\0", 3), r));
}

int connect_nonblocking(int port) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);  // EINPROGRESS: completes in the background
    return fd;
}

/// 1000 clients connect at once and hold their sockets open; 8 more send their request a byte at a time every 50 ms
/// (request_ns shortened to 1 s: the byte-a-second client of a 5 s deadline, scaled). The server never holds more
/// than max_connections, refuses the rest at accept, closes the slow ones at the deadline without an answer, and a
/// well-behaved client is answered once they are gone.
TEST(HttpServer, ThousandAndSlowClientsStayWithinLimits) {
    rlimit rl{};
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur < 2048) {
        rl.rlim_cur = std::min<rlim_t>(4096, rl.rlim_max);
        ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &rl), 0);
    }
    ASSERT_GE(rl.rlim_cur, 1100u);
    HttpLimits lim;
    lim.request_ns = 1'000'000'000;
    int handled = 0;
    HttpServer srv(
        "127.0.0.1:0",
        [&](const HttpRequest&) {
            ++handled;
            return HttpResponse{200, "text/plain", "ok\n"};
        },
        lim);
    int port = std::stoi(srv.bound().substr(srv.bound().rfind(':') + 1));
    auto pump = [&](int ms) {
        size_t most = 0;
        for (uint64_t end = mono_ns() + uint64_t(ms) * 1'000'000; mono_ns() < end;) {
            std::vector<pollfd> fds;
            srv.add_poll_fds(fds);
            poll(fds.data(), fds.size(), 5);
            srv.service(mono_ns());
            most = std::max(most, srv.open_connections());
        }
        return most;
    };
    std::vector<int> slow;
    for (int i = 0; i < 8; ++i) slow.push_back(connect_nonblocking(port));
    size_t most = pump(100);
    std::vector<int> flood;
    for (int i = 0; i < 1000; ++i) {
        flood.push_back(connect_nonblocking(port));
        if (i % 50 == 0) most = std::max(most, pump(5));
    }
    const std::string req = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
    for (size_t b = 0; b < req.size(); ++b) {  // 1.8 s of trickling: past the 1 s deadline
        for (int fd : slow) send(fd, &req[b], 1, MSG_NOSIGNAL);
        most = std::max(most, pump(50));
    }
    EXPECT_LE(most, lim.max_connections);
    EXPECT_EQ(srv.stats().accepted + srv.stats().refused, 1008u);  // every connection was taken or refused
    EXPECT_GE(srv.stats().refused, 1008u - 2 * lim.max_connections);
    EXPECT_EQ(handled, 0);  // the slow requests were never completed in time
    EXPECT_GE(srv.stats().timed_out, 8u);
    for (int fd : slow) {
        char c;
        EXPECT_LE(recv(fd, &c, 1, MSG_DONTWAIT), 0);  // closed, no response
        close(fd);
    }
    for (int fd : flood) close(fd);
    pump(100);
    auto r = exchange(srv, port, req);
    EXPECT_EQ(r.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << r;
    EXPECT_EQ(handled, 1);
}

}  // namespace
