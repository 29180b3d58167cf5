// What the subject consumed, measured by its supervisor: CPU time and peak RSS of what was reaped (the
// supervisor is the subreaper of the whole tree), and how many processes the subject started (the PID
// namespace's allocation counter, less the supervisor's own fork of a drainer). `start` is called just
// before the subject is spawned, so the helper's earlier children (the probe) are not counted.
#pragma once

#include "contracts/session_messages.hpp"

#include <cstdint>
#include <optional>
#include <sys/resource.h>

namespace maka_eval::in_container {

class usage_meter {
  public:
    void start();
    // After the leader is reaped: the usage over `wall_ms`. `forked_drainer`: one process allocated since
    // `start` was ours, not the subject's.
    [[nodiscard]] contracts::subject_usage measure(std::uint64_t wall_ms, bool forked_drainer) const;

  private:
    rusage children_before_{};
    std::optional<std::uint64_t> last_pid_before_;
};

} // namespace maka_eval::in_container
