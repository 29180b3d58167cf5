// Test support for the helper's integration tests: a scratch directory, run requests, session lines.
#pragma once

#include "contracts/session_messages.hpp"
#include "support/child_process.hpp"

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace maka_eval::test {

inline const std::string helper_binary = MAKA_EVAL_HELPER_BINARY;
inline const std::string result_token = "0123456789abcdef0123456789abcdef";

// A fresh directory with scope/ and artifacts/ below it, removed at the end.
class scratch {
  public:
    scratch();
    ~scratch();
    scratch(const scratch&) = delete;
    scratch& operator=(const scratch&) = delete;
    [[nodiscard]] const std::filesystem::path& path() const { return root_; }
    [[nodiscard]] std::string scope() const { return (root_ / "scope" / "s.pid").string(); }
    [[nodiscard]] std::string artifacts() const { return (root_ / "artifacts").string(); }
    [[nodiscard]] std::string artifact(bool stdout_stream) const;
    // A run request for `argv` writing into this directory; PATH lets subjects call maka-eval-helper.
    [[nodiscard]] contracts::run_request request(std::vector<std::string> argv) const;

  private:
    std::filesystem::path root_;
};

std::string read_text(const std::string& path);
bool process_alive(pid_t pid); // exists and is not a zombie
// Some process of group `pgid` exists and is not a zombie: a zombie is dead, whether or not PID 1 reaps.
bool group_alive(pid_t pgid);
// Polls `condition` every 10 ms for up to `timeout_ms`; its last answer.
bool eventually(const std::function<bool()>& condition, int timeout_ms = 3000);

// The helper in session mode; `start()` checks `hello` and sends the request.
class session {
  public:
    // The helper's session; `argv` starts it some other way (a wrapper that changes what it inherits).
    explicit session(const std::vector<std::string>& argv = {helper_binary, "session"});
    contracts::hello_message hello;
    void start(const contracts::run_request& request);
    // The next message of the given kind ("started", "exited", "settled", "error"); fails the test otherwise.
    // Heartbeats are counted in `heartbeats`, never returned.
    std::optional<contracts::session_message> next(int timeout_ms = 15000);
    child_process process;
    unsigned heartbeats = 0;
};

} // namespace maka_eval::test
