// The relay's phase log: one line per phase on stderr, with its duration, as text or JSON.
//
// Callers pass only names and numbers: tokens, credential values and the subject's output never reach a
// log line (the run transcript is printed separately, on request, by `run`).
#pragma once

#include <chrono>
#include <exception>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace maka_eval::relay {

enum class log_format { text, json };

class phase_log {
  public:
    // `into`: the lines go there instead of stderr (the trial's in-process tests read them).
    phase_log(log_format format, bool quiet, std::string* into = nullptr)
        : format_(format), quiet_(quiet), into_(into) {}
    using field = std::pair<std::string_view, std::string>;
    // Logs `phase` with the time since the previous phase (or since start) and the given fields; a field
    // whose value is empty is left out (it does not apply to this trial).
    void phase(std::string_view name, std::initializer_list<field> fields = {});
    void error(std::string_view message);

  private:
    void emit(std::string_view name, std::string_view level, std::initializer_list<field> fields);
    log_format format_;
    bool quiet_;
    std::string* into_;
    std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
};

// What a failed coroutine's exception says, for its completion handler's report (never rethrows).
[[nodiscard]] std::string exception_text(const std::exception_ptr& error);

} // namespace maka_eval::relay
