// The phase log (see log.hpp).
#include "relay/trial/log.hpp"

#include "contracts/wire_json.hpp"

#include <charconv>
#include <cstdint>
#include <unistd.h>

namespace maka_eval::relay {

void phase_log::emit(std::string_view name, std::string_view level, std::initializer_list<field> fields) {
    const auto now = std::chrono::steady_clock::now();
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now - last_).count();
    last_ = now;
    std::string line;
    if (format_ == log_format::json) {
        boost::json::object o{{"level", level}, {"phase", name}, {"ms", ms}};
        for (const auto& [key, value] : fields) {
            if (value.empty()) {
                continue; // a field that does not apply to this trial
            }
            // A count, a duration or an id is a number to whoever parses the log, not a string.
            std::int64_t number = 0;
            const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), number);
            const bool plain = !value.empty() && ec == std::errc() && end == value.data() + value.size() &&
                               (value == "0" || (value[0] != '0' && value.rfind("-0", 0) != 0));
            if (plain) {
                o[key] = number;
            } else {
                o[key] = value;
            }
        }
        line = contracts::to_wire(o);
    } else {
        line = "maka-eval-relay: " + std::string(name) + " (" + std::to_string(ms) + " ms)";
        for (const auto& [key, value] : fields) {
            if (value.empty()) {
                continue;
            }
            line += " " + std::string(key) + "=" + value;
        }
    }
    line.push_back('\n');
    if (into_ != nullptr) {
        into_->append(line);
        return;
    }
    (void)::write(STDERR_FILENO, line.data(), line.size());
}

void phase_log::phase(std::string_view name, std::initializer_list<field> fields) {
    if (!quiet_) {
        emit(name, "info", fields);
    }
}

void phase_log::error(std::string_view message) {
    emit("error", "error", {{"message", std::string(message)}});
}

std::string exception_text(const std::exception_ptr& error) {
    try {
        std::rethrow_exception(error);
    } catch (const std::exception& e) {
        return e.what();
    } catch (...) {
        return "an exception of unknown type";
    }
}

} // namespace maka_eval::relay
