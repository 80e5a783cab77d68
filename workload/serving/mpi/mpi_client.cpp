// The MPI launcher (mpi_client.h), built when the Makefile finds Open MPI. Only the main thread calls MPI.
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include <climits>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "common/error.h"
#include "workload/serving/line_prefix.h"
#include "workload/serving/results/merge_results.h"
#include "workload/serving/cluster/mpi_client.h"
#include "workload/serving/cluster/multi_client.h"
#include "workload/serving/tiers/remote_tier.h"

namespace kvio::serving {

namespace {

void check(int rc, const char* what) {
    if (rc == MPI_SUCCESS) return;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    throw Error(std::string("simulate --mpi: ") + what + ": " + std::string(msg, size_t(len)));
}

/// MPI_Init on construction (unless already initialised), MPI_Finalize at destruction.
struct MpiSession {
    bool owned = false;
    MpiSession() {
        int inited = 0;
        MPI_Initialized(&inited);
        if (inited) return;
        int provided = 0;
        check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
        owned = true;
    }
    ~MpiSession() {
        if (owned) MPI_Finalize();
    }
};

/// One rank's result as bytes: CBOR of {rank, host, output, exit_code, error, doc} (doubles exact).
std::vector<uint8_t> pack(const ClientResult& r) {
    nlohmann::ordered_json j = {{"rank", r.rank},           {"host", r.host},   {"output", r.output_path},
                                {"exit_code", r.exit_code}, {"error", r.error}, {"doc", r.doc}};
    return nlohmann::ordered_json::to_cbor(j);
}

ClientResult unpack(const uint8_t* p, size_t n, int rank) {
    ClientResult r;
    r.rank = rank;
    try {
        auto j = nlohmann::ordered_json::from_cbor(p, p + n);
        r.host = j.value("host", std::string("?"));
        r.output_path = j.value("output", std::string());
        r.exit_code = j.value("exit_code", 1);
        r.error = j.value("error", std::string());
        r.doc = j.value("doc", nlohmann::ordered_json(nullptr));
    } catch (const std::exception& e) {
        r.error = std::string("rank's gathered result does not decode: ") + e.what();
        r.exit_code = 1;
    }
    return r;
}

/// A stop signal passed between the ranks while their clocks run (docs/mlperf-benchmark.md, "One client per MPI
/// rank"): each rank posts a receive for a stop from any rank before the start barrier; a rank whose run gets a stop
/// signal sends its number to every other rank (non-blocking), and the main loop tests the receive
/// (SimHooks::poll_stop, the main thread: MPI_THREAD_FUNNELED). finish() completes the sends and receives every stop
/// sent to this rank (their count agreed by an MPI_Allreduce), so none is left over for the next run.
class StopRelay {
public:
    StopRelay(int rank, int size) : rank_(rank), size_(size) {}
    void post() {
        check(MPI_Irecv(&in_, 1, MPI_INT, MPI_ANY_SOURCE, kTag, MPI_COMM_WORLD, &recv_), "MPI_Irecv of a stop");
        posted_ = true;
    }
    int poll(int own) {
        if (own && !sent_) {
            sent_ = true;
            out_ = own;
            for (int r = 0; r < size_; ++r) {
                if (r == rank_) continue;
                MPI_Request q;
                check(MPI_Isend(&out_, 1, MPI_INT, r, kTag, MPI_COMM_WORLD, &q), "MPI_Isend of a stop");
                sends_.push_back(q);
            }
        }
        if (posted_ && !got_) {
            int flag = 0;
            MPI_Test(&recv_, &flag, MPI_STATUS_IGNORE);
            got_ = flag != 0;
        }
        return got_ ? in_ : 0;
    }
    void finish() {
        if (!sends_.empty()) MPI_Waitall(int(sends_.size()), sends_.data(), MPI_STATUSES_IGNORE);
        int mine = sent_ ? 1 : 0, senders = 0;
        check(MPI_Allreduce(&mine, &senders, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce of the stops");
        int expected = senders - mine;
        if (posted_ && !got_) {
            if (expected > 0) {
                MPI_Wait(&recv_, MPI_STATUS_IGNORE);
                got_ = true;
            } else {
                MPI_Cancel(&recv_);
                MPI_Wait(&recv_, MPI_STATUS_IGNORE);
            }
        }
        if (got_) --expected;
        for (int v = 0; expected > 0; --expected)
            check(MPI_Recv(&v, 1, MPI_INT, MPI_ANY_SOURCE, kTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                  "MPI_Recv of a stop");
    }

private:
    static constexpr int kTag = 7301;  // kvio's stop messages; no other point-to-point message uses a tag
    int rank_, size_;
    int in_ = 0, out_ = 0;
    bool posted_ = false, sent_ = false, got_ = false;
    MPI_Request recv_ = MPI_REQUEST_NULL;
    std::vector<MPI_Request> sends_;
};

}  // namespace

bool mpi_built() { return true; }

const char* mpi_build_status() {
    static const std::string s = [] {
        char v[MPI_MAX_LIBRARY_VERSION_STRING];
        int len = 0;
        MPI_Get_library_version(v, &len);
        std::string lib(v, size_t(len));
        if (auto nl = lib.find_first_of("\r\n,"); nl != std::string::npos) lib.resize(nl);
        return "MPI: built with " + lib + " (--mpi available: mpirun -np N kvio simulate --mpi ...)";
    }();
    return s.c_str();
}

MpiScope::MpiScope() {
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
        int provided = 0;
        check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
        owned_ = true;
    }
    check(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
}

MpiScope::~MpiScope() {
    if (owned_) MPI_Finalize();
}

/// Rank 0's make_remote_run_id(), sent to every rank (MPI_Bcast of its length, then its bytes).
static std::string broadcast_run_id(int rank) {
    std::string id = rank == 0 ? make_remote_run_id() : std::string();
    int len = int(id.size());
    check(MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Bcast of the remote run id's length");
    id.resize(size_t(len));
    check(MPI_Bcast(id.data(), len, MPI_CHAR, 0, MPI_COMM_WORLD), "MPI_Bcast of the remote run id");
    return id;
}

int mpi_max_over_ranks(int v) {
    int out = v;
    check(MPI_Allreduce(&v, &out, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
    return out;
}

std::vector<std::string> mpi_gather_strings(const std::string& mine) {
    int size = 1;
    check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
    if (mine.size() > size_t(INT_MAX)) throw Error("simulate --mpi: a string of more than 2 GiB to gather");
    int len = int(mine.size());
    std::vector<int> lens(static_cast<size_t>(size)), displs(static_cast<size_t>(size));
    check(MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, MPI_COMM_WORLD), "MPI_Allgather of lengths");
    size_t total = 0;
    for (int i = 0; i < size; ++i) {
        if (total > size_t(INT_MAX) - size_t(lens[size_t(i)]))
            throw Error("simulate --mpi: gathered strings exceed 2 GiB");
        displs[size_t(i)] = int(total);
        total += size_t(lens[size_t(i)]);
    }
    std::string all(total, '\0');
    check(MPI_Allgatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, MPI_COMM_WORLD),
          "MPI_Allgatherv of strings");
    std::vector<std::string> out;
    for (int i = 0; i < size; ++i) out.push_back(all.substr(size_t(displs[size_t(i)]), size_t(lens[size_t(i)])));
    return out;
}

std::string mpi_host_name() {
    char host[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    check(MPI_Get_processor_name(host, &len), "MPI_Get_processor_name");
    return std::string(host, size_t(len));
}

SimResult run_mpi_client(const SimConfig& c, std::ostream* console, std::ostream* progress,
                         std::vector<ClientResult>* gathered, const std::function<void(int, bool)>& on_stop) {
    MpiSession session;
    int rank = 0, size = 1;
    check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size");
    char host[MPI_MAX_PROCESSOR_NAME];
    int host_len = 0;
    MPI_Get_processor_name(host, &host_len);

    // Ranks on this host share its filesystem: each gets its share of the automatic storage limit.
    MPI_Comm node;
    int on_host = 1;
    check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
    MPI_Comm_size(node, &on_host);
    MPI_Comm_free(&node);
    SimConfig rc = client_config(c, rank, size);
    // One remote namespace for the run: rank 0 chooses the run id, every rank gets it (docs/simulate.md, "Remote
    // tier").
    if (!c.remote_tier.empty() && c.remote_run_id.empty()) rc.remote_run_id = broadcast_run_id(rank);

    ClientResult me;
    me.rank = rank;
    me.host = std::string(host, size_t(host_len));
    me.output_path = client_output_path(c.output, rank);
    bool at_barrier = false;
    SimHooks hooks;
    hooks.keep_merge_state = true;
    StopRelay relay(rank, size);
    hooks.before_start = [&] {
        at_barrier = true;
        relay.post();
        check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier before the start");
    };
    bool told = false;
    hooks.poll_stop = [&](int own) {
        const int other = relay.poll(own);
        if (!told && on_stop && (own || other)) {
            told = true;
            on_stop(own ? own : other, own != 0);
        }
        return other;
    };
    SimResult own;
    {
        LinePrefixStream prog(progress ? *progress : std::cerr, "rank " + std::to_string(rank) + ": ");
        try {
            check_multi_client(c, "--mpi");
            share_storage_capacity(rc, on_host);
            own = run_simulation(rc, nullptr, progress ? &prog : nullptr, hooks);
            me.exit_code = own.exit_code;
            me.doc = own.results;
        } catch (const std::exception& e) {
            me.error = e.what();
            me.exit_code = 1;
            std::cerr << "kvio simulate: rank " << rank << ": " << e.what() << "\n";
            if (!at_barrier) check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier before the start");
        }
    }

    relay.finish();  // every rank, also one that failed: the stops sent to it are received

    // Gather every rank's packed result on rank 0: sizes first, then the bytes.
    std::vector<uint8_t> mine = pack(me);
    if (mine.size() > size_t(INT_MAX))
        throw Error("simulate --mpi: rank " + std::to_string(rank) + ": results of " + std::to_string(mine.size()) +
                    " bytes exceed one MPI_Gatherv (2 GiB)");
    int my_len = int(mine.size());
    std::vector<int> lens(rank == 0 ? size_t(size) : 0), displs(rank == 0 ? size_t(size) : 0);
    check(MPI_Gather(&my_len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD), "MPI_Gather of sizes");
    std::vector<uint8_t> all;
    if (rank == 0) {
        size_t total = 0;
        for (int i = 0; i < size; ++i) {
            if (total > size_t(INT_MAX) - size_t(lens[size_t(i)]))
                throw Error("simulate --mpi: the gathered results exceed 2 GiB");
            displs[size_t(i)] = int(total);
            total += size_t(lens[size_t(i)]);
        }
        all.resize(total);
    }
    check(
        MPI_Gatherv(mine.data(), my_len, MPI_BYTE, all.data(), lens.data(), displs.data(), MPI_BYTE, 0, MPI_COMM_WORLD),
        "MPI_Gatherv of the results");
    if (rank != 0) {
        if (!me.error.empty()) throw Error("simulate --mpi: rank " + std::to_string(rank) + ": " + me.error);
        if (gathered) gathered->assign(1, me);
        return own;
    }

    std::vector<ClientResult> results;
    bool failed = false;
    int worst = 0;
    for (int i = 0; i < size; ++i) {
        results.push_back(unpack(all.data() + displs[size_t(i)], size_t(lens[size_t(i)]), i));
        if (!results.back().error.empty()) {
            failed = true;
            std::cerr << "kvio simulate: rank " << i << " failed: " << results.back().error << "\n";
        }
        worst = std::max(worst, results.back().exit_code);
    }
    SimResult res;
    res.results = merge_client_results(results, "mpi");
    res.output_path = write_merged_result(c, res.results, c.quiet ? nullptr : console);
    res.exit_code = failed ? std::max(worst, 1) : worst;
    if (gathered) *gathered = std::move(results);
    return res;
}

}  // namespace kvio::serving
