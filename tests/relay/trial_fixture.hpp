// Test support: one trial with real processes — the scriptable loopback orchestrator
// (maka-eval-test-orchestrator) and `maka-eval-relay connect` — over real TCP.
#pragma once

#include "in_container/fixture.hpp"
#include "support/child_process.hpp"

#include <functional>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

#include <boost/json/object.hpp>

namespace maka_eval::test {

inline const std::string relay_binary = MAKA_EVAL_RELAY_BINARY;
inline const std::string orchestrator_binary = MAKA_EVAL_TEST_ORCHESTRATOR;
inline const std::string relay_token = "relay-token-0123456789abcdef0123456789abcdef0123";

std::vector<std::string> base_env();

struct outcome {
    int exit_code = -1;
    boost::json::object transcript;
    std::string relay_log;
};

// Another user the relay runs as (the rootless Podman tests' relay is that engine's owner): its uid and gid.
struct relay_user {
    uid_t uid = 0;
    gid_t gid = 0;
};

class trial {
  public:
    // `scenario_args` go to the orchestrator double (see its usage), `relay_args` to `connect`; `as`: the
    // relay runs as that user (setpriv), in a work directory it owns.
    trial(std::vector<std::string> scenario_args, std::vector<std::string> relay_args = {},
          std::vector<std::string> relay_env = base_env(),
          std::vector<std::string> orchestrator_env = base_env(), std::optional<relay_user> as = {});

    // Waits until the subject runs and returns its pgid. Local backend by default: the scope file in the work
    // directory; `read_scope` reads it elsewhere (inside a container).
    pid_t wait_running(const std::function<std::string()>& read_scope = {});
    void signal(int sig);
    // Waits until the orchestrator double reports `what` ("ready", "executed").
    void wait_event(const std::string& what, int timeout_ms = 30000);
    outcome finish(int timeout_ms = 30000);
    [[nodiscard]] const std::filesystem::path& dir() const { return dir_.path(); }
    [[nodiscard]] pid_t relay_pid() const { return relay_->pid(); }
    // Waits until the relay's log (stderr) shows `text`.
    bool log_shows(const std::string& text, int timeout_ms = 30000) {
        return relay_->stderr_shows(text, timeout_ms);
    }

  private:
    scratch dir_;
    child_process orchestrator_;
    std::optional<child_process> relay_;
};

// Orchestrator arguments for a subject `sh -c SCRIPT` (HELPER in its environment names the helper).
std::vector<std::string> subject(std::vector<std::string> scenario, const std::string& script,
                                 const std::string& helper = helper_binary);

const boost::json::object& executed_of(const outcome& o);

} // namespace maka_eval::test
