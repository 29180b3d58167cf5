// One idiom for the helper's commands' options: each command lists what it takes — `--name VALUE` into a
// string, `--name N` into an integer within bounds, a `--flag` — and `parse` reads argv against that list,
// up to `--` (what follows is the command's own rest). Anything else is a usage error, logged as one line
// naming it and the command's usage line: an unknown option, a missing or malformed value, a number out of
// its bounds, an option given twice. Which options are required is the command's to check afterwards
// (`given`), since what may be left out differs per command.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace maka_eval::in_container {

class command_options {
  public:
    // `command`: the name in messages ("cancel"); `usage`: its usage line.
    command_options(std::string_view command, std::string_view usage) : command_(command), usage_(usage) {}

    command_options& text(std::string_view name, std::string& out);
    command_options& number(std::string_view name, std::int64_t& out, std::int64_t min, std::int64_t max);
    command_options& flag(std::string_view name, bool& out);

    // False: a usage error, already logged. `rest`, when given, receives what follows `--` (a `--` is
    // then allowed; without `rest` it is an unknown option).
    [[nodiscard]] bool parse(std::span<const std::string_view> args,
                             std::span<const std::string_view>* rest = nullptr);
    [[nodiscard]] bool given(std::string_view name) const;
    // Logs `why` and the usage line: for a command's own check after parse (a required option left out).
    bool usage_error(std::string_view why) const;

  private:
    enum class kind { text, number, flag };
    struct option {
        std::string_view name;
        kind what;
        void* out;
        std::int64_t min = 0;
        std::int64_t max = 0;
        bool seen = false;
    };
    [[nodiscard]] bool take(option& o, std::string_view value) const;

    std::string_view command_;
    std::string_view usage_;
    std::vector<option> options_;
};

} // namespace maka_eval::in_container
