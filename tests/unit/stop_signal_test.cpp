// kvio::StopSignal (common/stop_signal.h): a stop signal is remembered (the first one names the stop), passed to the
// callback every time, received by the innermost instance alive, and the previous dispositions come back after.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>

#include "common/stop_signal.h"

using kvio::StopSignal;

namespace {

/// The handler (or SIG_DFL / SIG_IGN) installed for `sig` now.
void (*disposition(int sig))(int) {
    struct sigaction sa {};
    sigaction(sig, nullptr, &sa);
    return sa.sa_handler;
}

std::atomic<int> g_calls{0};
std::atomic<int> g_last{0};
void count_call(int sig) {
    ++g_calls;
    g_last = sig;
}

volatile sig_atomic_t g_foreign = 0;
void foreign_handler(int sig) { g_foreign = sig; }

}  // namespace

TEST(StopSignal, RemembersTheFirstSignal) {
    StopSignal stop;
    EXPECT_FALSE(stop.stopped());
    EXPECT_EQ(stop.signo(), 0);
    EXPECT_EQ(*stop.flag(), 0);
    ASSERT_EQ(raise(SIGTERM), 0);
    EXPECT_TRUE(stop.stopped());
    EXPECT_EQ(stop.signo(), SIGTERM);
    EXPECT_EQ(*stop.flag(), SIGTERM);
    ASSERT_EQ(raise(SIGINT), 0);  // a second signal does not rename the stop
    ASSERT_EQ(raise(SIGHUP), 0);
    EXPECT_EQ(stop.signo(), SIGTERM);
    EXPECT_EQ(*stop.flag(), SIGTERM);
}

TEST(StopSignal, EachInstanceStartsUnstopped) {
    {
        StopSignal first;
        raise(SIGHUP);
        EXPECT_EQ(first.signo(), SIGHUP);
    }
    StopSignal second;
    EXPECT_FALSE(second.stopped());
    raise(SIGINT);
    EXPECT_EQ(second.signo(), SIGINT);
}

TEST(StopSignal, CallbackGetsEverySignal) {
    g_calls = 0;
    g_last = 0;
    StopSignal stop(StopSignal::Options{.restart = true, .on_signal = count_call});
    raise(SIGINT);
    raise(SIGTERM);
    EXPECT_EQ(g_calls, 2);
    EXPECT_EQ(g_last, SIGTERM);
    EXPECT_EQ(stop.signo(), SIGINT);
    struct sigaction sa {};
    sigaction(SIGINT, nullptr, &sa);
    EXPECT_TRUE(sa.sa_flags & SA_RESTART);
}

TEST(StopSignal, InnermostReceivesThenOuterAgain) {
    StopSignal outer;
    {
        StopSignal inner;
        raise(SIGTERM);
        EXPECT_EQ(inner.signo(), SIGTERM);
        EXPECT_FALSE(outer.stopped()) << "the inner handler replaced the outer one's";
    }
    EXPECT_FALSE(outer.stopped());
    raise(SIGHUP);
    EXPECT_EQ(outer.signo(), SIGHUP);
}

TEST(StopSignal, RestoresPreviousDispositions) {
    struct sigaction ign {
    }, own{}, saved[3];
    ign.sa_handler = SIG_IGN;
    own.sa_handler = foreign_handler;
    sigaction(SIGINT, &ign, &saved[0]);  // as in a shell's background job
    sigaction(SIGTERM, &own, &saved[1]);
    sigaction(SIGHUP, nullptr, &saved[2]);
    {
        StopSignal stop;
        for (int sig : kvio::kStopSignals) {
            EXPECT_NE(disposition(sig), SIG_IGN);
            EXPECT_NE(disposition(sig), SIG_DFL);
        }
        raise(SIGINT);  // caught even though it was ignored before
        EXPECT_EQ(stop.signo(), SIGINT);
    }
    EXPECT_EQ(disposition(SIGINT), SIG_IGN);
    EXPECT_EQ(disposition(SIGTERM), foreign_handler);
    EXPECT_EQ(disposition(SIGHUP), saved[2].sa_handler);
    g_foreign = 0;
    raise(SIGTERM);
    EXPECT_EQ(g_foreign, SIGTERM);
    for (int i = 0; i < 3; ++i) sigaction(kvio::kStopSignals[i], &saved[i], nullptr);
}

TEST(StopSignal, ChildGetsDefaultDispositions) {
    StopSignal stop;
    sigset_t set = kvio::stop_signal_set();
    for (int sig : kvio::kStopSignals) EXPECT_EQ(sigismember(&set, sig), 1);
    EXPECT_EQ(sigismember(&set, SIGPIPE), 0);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        kvio::default_stop_signals();
        raise(SIGTERM);  // the default action: the child dies of it
        _exit(0);
    }
    int st = 0;
    ASSERT_EQ(waitpid(pid, &st, 0), pid);
    EXPECT_TRUE(WIFSIGNALED(st));
    EXPECT_EQ(WTERMSIG(st), SIGTERM);
    EXPECT_FALSE(stop.stopped());
}

// A signal right after the first (a forwarded copy, a terminal's process group) is not the user insisting; one
// StopSignal::kInsistNs or more later is, and names itself.
TEST(StopSignal, ASecondSignalInsistsOnlyWhenItComesLater) {
    StopSignal stop;
    raise(SIGINT);
    raise(SIGINT);
    EXPECT_FALSE(stop.insisted());
    EXPECT_EQ(*stop.insist_flag(), 0);
    usleep(useconds_t(StopSignal::kInsistNs / 1000 + 50'000));
    raise(SIGTERM);
    EXPECT_TRUE(stop.insisted());
    EXPECT_EQ(*stop.insist_flag(), SIGTERM);
    EXPECT_EQ(stop.signo(), SIGINT) << "the first signal still names the stop";
}

// The first signal's message goes to stderr once, whatever comes after.
TEST(StopSignal, FirstMessageIsWrittenOnce) {
    testing::internal::CaptureStderr();
    {
        StopSignal stop(StopSignal::Options{.first_message = "stopping: finishing what is in flight\n"});
        raise(SIGTERM);
        raise(SIGTERM);
    }
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "stopping: finishing what is in flight\n");
}
