// The clean start: what one trial's subject left running is recorded, and the next trial stops exactly that
// (same pid and start time, or a member of a recorded session) — never a process that merely reused a pid.
// Each test records into its own scratch directory, so parallel tests never stop each other's processes.
#include "in_container/fixture.hpp"
#include "in_container/process/process_table.hpp"
#include "in_container/process/root_state.hpp"

#include <csignal>
#include <filesystem>
#include <sys/wait.h>
#include <unistd.h>

#include <doctest/doctest.h>

namespace {

using namespace maka_eval;
using namespace maka_eval::test;

// A child in a session of its own, as a daemon a subject leaves behind; reaped at the end either way.
class daemon_child {
  public:
    explicit daemon_child(const std::string& script = "exec sleep 30") : pid_(::fork()) {
        REQUIRE(pid_ >= 0);
        if (pid_ == 0) {
            ::setsid();
            ::execlp("sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
        // setsid() has run once the child is its own session leader.
        REQUIRE(eventually([this] {
            const auto s = in_container::read_status(pid_);
            return s && s->sid == pid_;
        }));
    }
    ~daemon_child() {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
    }
    daemon_child(const daemon_child&) = delete;
    daemon_child& operator=(const daemon_child&) = delete;
    [[nodiscard]] pid_t pid() const { return pid_; }
    [[nodiscard]] in_container::process_status status() const {
        const auto s = in_container::read_status(pid_);
        REQUIRE(s);
        return *s;
    }

  private:
    pid_t pid_;
};

const std::string record_name = "leftovers";

TEST_CASE("a recorded leftover is stopped before the next trial, and the record is consumed") {
    scratch dir;
    daemon_child left;
    in_container::record_leftovers(dir.path().string(), {left.status()});
    CHECK(std::filesystem::exists(dir.path() / record_name));
    CHECK(in_container::stop_leftovers(dir.path().string()).signalled == 1);
    CHECK_FALSE(process_alive(left.pid())); // a zombie of ours counts as stopped
    CHECK_FALSE(std::filesystem::exists(dir.path() / record_name));
    CHECK(in_container::stop_leftovers(dir.path().string()).signalled == 0);
}

TEST_CASE("a process that reused a recorded pid, or started a new session under its number, is left alone") {
    scratch dir;
    daemon_child other;
    auto stale = other.status();
    stale.start_time += 1; // the recorded process was an earlier one with the same pid
    in_container::record_leftovers(dir.path().string(), {stale});
    CHECK(in_container::stop_leftovers(dir.path().string()).signalled == 0);
    CHECK(process_alive(other.pid()));
}

TEST_CASE("every live member of a recorded session is stopped, recorded or not") {
    scratch dir;
    const std::string pidfile = (dir.path() / "member.pid").string();
    daemon_child leader("sleep 30 & echo $! > " + pidfile + "; exec sleep 30");
    REQUIRE(eventually([&] { return read_text(pidfile).ends_with("\n"); }));
    const auto member = static_cast<pid_t>(std::stol(read_text(pidfile)));
    REQUIRE(process_alive(member));
    in_container::record_leftovers(dir.path().string(), {leader.status()}); // the member is not recorded
    CHECK(in_container::stop_leftovers(dir.path().string()).signalled == 2);
    CHECK_FALSE(process_alive(leader.pid()));
    CHECK_FALSE(process_alive(member));
}

TEST_CASE("only live processes are recorded, and an empty record leaves no file") {
    scratch dir;
    in_container::process_status zombie{};
    zombie.pid = 12345;
    zombie.state = 'Z';
    in_container::record_leftovers(dir.path().string(), {zombie});
    CHECK_FALSE(std::filesystem::exists(dir.path() / record_name));
}

} // namespace
