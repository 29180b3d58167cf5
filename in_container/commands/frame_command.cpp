// `maka-eval-helper frame [PAYLOAD|-]`: print one result frame for the token in MAKA_EVAL_RESULT_TOKEN.
//
// For subject authors writing shell: `maka-eval-helper frame '{"status":"completed"}'`. The payload comes
// from the argument, or from stdin with `-` or no argument (one trailing newline dropped, as `echo` adds
// one). It must be UTF-8 and at most 2,048 bytes — anything else would only be rejected by the relay later.
// The line is written with a single write(2), so it is never interleaved with the subject's other output.
#include "contracts/limits.hpp"
#include "contracts/result_frame.hpp"
#include "contracts/utf8.hpp"
#include "in_container/base/io.hpp"
#include "in_container/commands/cli.hpp"

#include <cstdlib>
#include <string>
#include <unistd.h>

namespace maka_eval::in_container {

int frame_command(std::span<const std::string_view> args) {
    if (args.size() > 1) {
        log_line("usage: maka-eval-helper frame [PAYLOAD|-]");
        return exit_usage;
    }
    std::string payload;
    if (args.empty() || args[0] == "-") {
        auto input = read_all(STDIN_FILENO, contracts::payload_limit_bytes + 2);
        if (!input) {
            log_line("frame: the payload exceeds 2048 bytes or stdin could not be read");
            return exit_failed;
        }
        payload = std::move(*input);
        if (!payload.empty() && payload.back() == '\n') {
            payload.pop_back();
        }
    } else {
        payload = std::string(args[0]);
    }
    const char* token = std::getenv(std::string(contracts::result_token_variable).c_str());
    if (token == nullptr || !contracts::is_result_token(token)) {
        log_line("frame: MAKA_EVAL_RESULT_TOKEN is not set to a 32-hex result token");
        return exit_failed;
    }
    if (!contracts::is_valid_utf8(payload)) {
        log_line("frame: the payload is not UTF-8");
        return exit_failed;
    }
    auto line = contracts::encode_frame(token, payload);
    if (!line) {
        log_line("frame: " + line.error().message());
        return exit_failed;
    }
    return write_all(STDOUT_FILENO, *line) ? exit_ok : exit_failed;
}

} // namespace maka_eval::in_container
