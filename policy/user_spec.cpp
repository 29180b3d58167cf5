// docker-exec user specs against passwd/group text (see user_spec.hpp).
#include "policy/user_spec.hpp"

#include "contracts/table_category.hpp"

#include <charconv>
#include <optional>

namespace maka_eval::policy {
namespace {

constexpr contracts::name_table<user_error, 4> user_category_messages{{
    {user_error::empty_spec, "the user spec names no user"},
    {user_error::unknown_user, "no matching entries in passwd file"},
    {user_error::unknown_group, "no matching entries in group file"},
    {user_error::malformed_spec, "the user spec is not name|uid[:group|gid]"},
}};

std::optional<std::uint32_t> numeric_id(std::string_view text) {
    std::uint32_t value = 0;
    const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
        return std::nullopt;
    }
    return value;
}

// The colon-separated fields of each line, comments and blank lines skipped.
template <typename Visit>
void for_each_entry(std::string_view text, Visit&& visit) {
    while (!text.empty()) {
        const auto end = text.find('\n');
        std::string_view line = text.substr(0, end);
        text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
        if (!line.empty() && line.back() == '\r') {
            line.remove_suffix(1);
        }
        if (line.empty() || line.front() == '#') {
            continue;
        }
        std::vector<std::string_view> fields;
        while (true) {
            const auto colon = line.find(':');
            fields.push_back(line.substr(0, colon));
            if (colon == std::string_view::npos) {
                break;
            }
            line.remove_prefix(colon + 1);
        }
        if (visit(fields)) {
            return;
        }
    }
}

bool lists_member(std::string_view members, std::string_view name) {
    while (!members.empty()) {
        const auto comma = members.find(',');
        if (members.substr(0, comma) == name) {
            return true;
        }
        members.remove_prefix(comma == std::string_view::npos ? members.size() : comma + 1);
    }
    return false;
}

} // namespace

const boost::system::error_category& user_category() noexcept {
    static const contracts::table_category instance("maka-eval.user", user_category_messages,
                                                    "unknown user error");
    return instance;
}

boost::system::error_code make_error_code(user_error e) noexcept {
    return {static_cast<int>(e), user_category()};
}

boost::system::result<subject_identity> resolve_user(std::string_view spec, std::string_view passwd_text,
                                                     std::string_view group_text) {
    const auto colon = spec.find(':');
    const std::string_view user = spec.substr(0, colon);
    const bool has_group = colon != std::string_view::npos;
    const std::string_view group = has_group ? spec.substr(colon + 1) : std::string_view();
    if (user.empty()) {
        return user_error::empty_spec;
    }
    if (group.find(':') != std::string_view::npos || (has_group && group.empty())) {
        return user_error::malformed_spec;
    }
    const auto uid_arg = numeric_id(user);
    subject_identity out;
    bool found = false;
    for_each_entry(passwd_text, [&](const std::vector<std::string_view>& f) {
        if (f.size() < 7) {
            return false;
        }
        const auto uid = numeric_id(f[2]);
        const auto gid = numeric_id(f[3]);
        if (!uid || !gid || (f[0] != user && uid != uid_arg)) {
            return false;
        }
        out.uid = *uid;
        out.gid = *gid;
        out.name = std::string(f[0]);
        out.home = f[5].empty() ? std::string("/") : std::string(f[5]);
        found = true;
        return true;
    });
    if (!found) {
        if (!uid_arg) {
            return user_error::unknown_user;
        }
        out.uid = *uid_arg;
    }
    if (has_group) {
        const auto gid_arg = numeric_id(group);
        bool group_found = false;
        for_each_entry(group_text, [&](const std::vector<std::string_view>& f) {
            const auto gid = f.size() >= 3 ? numeric_id(f[2]) : std::nullopt;
            if (!gid || (gid_arg ? *gid != *gid_arg : f[0] != group)) {
                return false;
            }
            out.gid = *gid;
            group_found = true;
            return true;
        });
        if (!group_found) {
            if (!gid_arg) {
                return user_error::unknown_group;
            }
            out.gid = *gid_arg;
        }
        return out;
    }
    if (!out.name.empty()) {
        for_each_entry(group_text, [&](const std::vector<std::string_view>& f) {
            const auto gid = f.size() >= 4 ? numeric_id(f[2]) : std::nullopt;
            if (gid && lists_member(f[3], out.name)) {
                out.groups.push_back(*gid);
            }
            return false;
        });
    }
    return out;
}

} // namespace maka_eval::policy
