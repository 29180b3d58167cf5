// What the subject consumed, measured by its supervisor: CPU time and peak RSS of the subject's processes
// as they are reaped (wait4: each with its own reaped descendants; the supervisor is the subreaper of the
// whole tree), never the supervisor's own children (the launcher, a drainer), and how many processes the
// subject started (the PID namespace's allocation counter, less the supervisor's own forks). `start` is
// called just before the subject is spawned, so the helper's earlier children (the probe) are not counted.
// The subject is forked from a fresh launcher (spawn.hpp), so its peak RSS is its own, not ours.
#pragma once

#include "contracts/session_messages.hpp"

#include <cstdint>
#include <optional>
#include <set>
#include <sys/resource.h>

namespace maka_eval::in_container {

class usage_meter {
  public:
    void start();
    // One of the subject's processes was reaped with this usage (its own and its reaped descendants').
    void add(const rusage& reaped);
    // Where the PID namespace is the host's (`shared`), processes are counted as seen: `saw` for each one
    // found alive in the subject's tree or reaped. A process that starts and is reaped by its own parent
    // between two looks (census_interval) is not seen: the count is then a lower bound (docs/running.md).
    void count_by_census(bool shared) { census_ = shared; }
    [[nodiscard]] bool by_census() const { return census_; }
    void saw(pid_t pid) { seen_.insert(pid); }
    static constexpr int census_interval_ms = contracts::subject_usage::census_interval_ms;
    // After the leader is reaped: the usage over `wall_ms`. `own_processes`: how many processes allocated
    // since `start` were ours (the launcher, a drainer), not the subject's.
    [[nodiscard]] contracts::subject_usage measure(std::uint64_t wall_ms, std::uint64_t own_processes) const;

  private:
    std::uint64_t user_us_ = 0;
    std::uint64_t system_us_ = 0;
    std::uint64_t peak_rss_kib_ = 0;
    std::optional<std::uint64_t> last_pid_before_;
    bool census_ = false;
    std::set<pid_t> seen_;
};

} // namespace maka_eval::in_container
