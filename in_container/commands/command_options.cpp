// The helper's commands' options (see command_options.hpp).
#include "in_container/commands/command_options.hpp"

#include "in_container/base/io.hpp"
#include "in_container/base/text_fields.hpp"

namespace maka_eval::in_container {

command_options& command_options::text(std::string_view name, std::string& out) {
    options_.push_back({name, kind::text, &out});
    return *this;
}

command_options& command_options::number(std::string_view name, std::int64_t& out, std::int64_t min,
                                         std::int64_t max) {
    options_.push_back({name, kind::number, &out, min, max});
    return *this;
}

command_options& command_options::flag(std::string_view name, bool& out) {
    options_.push_back({name, kind::flag, &out});
    return *this;
}

bool command_options::take(option& o, std::string_view value) const {
    switch (o.what) {
    case kind::text:
        *static_cast<std::string*>(o.out) = value;
        return true;
    case kind::number: {
        std::int64_t n = 0;
        if (!parse_number(value, n) || n < o.min || n > o.max) {
            return usage_error(std::string(o.name) + " takes a whole number from " + std::to_string(o.min) +
                               " to " + std::to_string(o.max) + ", not '" + std::string(value) + "'");
        }
        *static_cast<std::int64_t*>(o.out) = n;
        return true;
    }
    case kind::flag:
        *static_cast<bool*>(o.out) = true;
        return true;
    }
    return false;
}

bool command_options::parse(std::span<const std::string_view> args, std::span<const std::string_view>* rest) {
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--" && rest != nullptr) {
            *rest = args.subspan(i + 1);
            return true;
        }
        option* found = nullptr;
        for (auto& o : options_) {
            found = o.name == args[i] ? &o : found;
        }
        if (found == nullptr) {
            return usage_error("unknown argument '" + std::string(args[i]) + "'");
        }
        if (found->seen) {
            return usage_error(std::string(found->name) + " is given twice");
        }
        found->seen = true;
        if (found->what == kind::flag) {
            (void)take(*found, {});
            continue;
        }
        if (i + 1 == args.size()) {
            return usage_error(std::string(found->name) + " needs a value");
        }
        if (!take(*found, args[++i])) {
            return false;
        }
    }
    if (rest != nullptr) {
        *rest = {};
    }
    return true;
}

bool command_options::given(std::string_view name) const {
    for (const auto& o : options_) {
        if (o.name == name) {
            return o.seen;
        }
    }
    return false;
}

bool command_options::usage_error(std::string_view why) const {
    log_line(std::string(command_) + ": " + std::string(why));
    log_line(usage_);
    return false;
}

} // namespace maka_eval::in_container
