// The host-side record of helper installs (see install_record.hpp).
#include "relay/install_record.hpp"

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

namespace maka_eval::relay {
namespace {

constexpr auto entry_lifetime = std::chrono::hours(24);

// Ours alone: a real directory (no symbolic link), owned by this user, no access for group or others.
bool private_directory(const std::string& path) {
    if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
        return false;
    }
    struct stat info {};
    return ::lstat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode) && info.st_uid == ::geteuid() &&
           (info.st_mode & 077) == 0;
}

std::optional<std::string> usual_directory() {
    const char* runtime = std::getenv("XDG_RUNTIME_DIR");
    std::string path = runtime != nullptr && runtime[0] == '/'
                           ? std::string(runtime) + "/maka-eval-relay"
                           : "/tmp/maka-eval-relay-" + std::to_string(::geteuid());
    return private_directory(path) ? std::optional<std::string>(std::move(path)) : std::nullopt;
}

// Names come from the engine (a container id) and from our own hash: anything else is not a file name.
bool plain_name(std::string_view text) {
    if (text.empty() || text.size() > 128) {
        return false;
    }
    for (const char c : text) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                        c == '-' || c == '_' || c == '.';
        if (!ok) {
            return false;
        }
    }
    return text.front() != '.';
}

} // namespace

install_record::install_record(std::optional<std::string> directory)
    : directory_(directory ? (private_directory(*directory) ? directory : std::nullopt) : usual_directory()) {
}

std::optional<std::string> install_record::entry(std::string_view container_id,
                                                 std::string_view helper) const {
    if (!directory_ || !plain_name(container_id) || !plain_name(helper)) {
        return std::nullopt;
    }
    return *directory_ + "/" + std::string(container_id) + "+" + std::string(helper);
}

bool install_record::contains(std::string_view container_id, std::string_view helper) const {
    const auto path = entry(container_id, helper);
    struct stat info {};
    return path && ::lstat(path->c_str(), &info) == 0 && S_ISREG(info.st_mode);
}

void install_record::add(std::string_view container_id, std::string_view helper) const {
    const auto path = entry(container_id, helper);
    if (!path) {
        return;
    }
    std::error_code ec;
    const auto now = std::filesystem::file_time_type::clock::now();
    for (std::filesystem::directory_iterator it(*directory_, ec), end; !ec && it != end; it.increment(ec)) {
        std::error_code ignored;
        const auto written = it->last_write_time(ignored);
        if (!ignored && now - written > entry_lifetime) {
            std::filesystem::remove(it->path(), ignored);
        }
    }
    const int fd = ::open(path->c_str(), O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0) {
        ::close(fd);
    }
}

void install_record::forget(std::string_view container_id) const {
    if (!directory_ || !plain_name(container_id)) {
        return;
    }
    const std::string prefix = std::string(container_id) + "+";
    std::error_code ec;
    for (std::filesystem::directory_iterator it(*directory_, ec), end; !ec && it != end; it.increment(ec)) {
        if (it->path().filename().string().starts_with(prefix)) {
            std::error_code ignored;
            std::filesystem::remove(it->path(), ignored);
        }
    }
}

} // namespace maka_eval::relay
