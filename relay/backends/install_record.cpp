// The host-side record of helper installs (see install_record.hpp).
#include "relay/backends/install_record.hpp"

#include "posix/io.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace maka_eval::relay {
namespace {

constexpr auto entry_lifetime = std::chrono::hours(24);
// Old entries go at most this often: a lookup is one stat however many trials ran today.
constexpr auto tidy_interval = std::chrono::hours(1);
constexpr const char* tidied_marker = ".tidied";

int open_directory(int at, const std::string& path) {
    return posix::open_retry(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0, at);
}

// `path`'s directory, made if missing inside a parent that is ours (or root's) and closed to others (or
// sticky); then checked as it is open: a real directory, ours, no access for group or others. -1 with
// `why` otherwise.
int open_private(const std::string& path, std::string& why) {
    const auto slash = path.rfind('/');
    const std::string parent = slash == 0 ? "/" : path.substr(0, slash);
    const std::string name = path.substr(slash + 1);
    const int parent_fd = open_directory(AT_FDCWD, parent);
    struct stat info {};
    if (parent_fd < 0 || ::fstat(parent_fd, &info) != 0) {
        why = parent + ": " + std::strerror(errno);
        if (parent_fd >= 0) {
            ::close(parent_fd);
        }
        return -1;
    }
    const bool parent_ours = info.st_uid == ::geteuid() || info.st_uid == 0;
    const bool parent_closed = (info.st_mode & (S_IWGRP | S_IWOTH)) == 0 || (info.st_mode & S_ISVTX) != 0;
    if (!parent_ours || !parent_closed) {
        ::close(parent_fd);
        why = parent + " is owned by uid " + std::to_string(info.st_uid) +
              (parent_ours ? " and open to others" : ", not by us") + " (its owner could swap what is in it)";
        return -1;
    }
    const int made_error = ::mkdirat(parent_fd, name.c_str(), 0700) == 0 ? 0 : errno;
    const int fd = open_directory(parent_fd, name);
    // A directory that could not be made (a full /tmp: ENOSPC) is missing: its cause is the mkdir's.
    const int error = errno == ENOENT && made_error != 0 && made_error != EEXIST ? made_error : errno;
    ::close(parent_fd);
    if (fd < 0) {
        why = path + ": " +
              (error == ELOOP || error == ENOTDIR ? "a symbolic link or not a directory"
                                                  : std::string(std::strerror(error)));
        return -1;
    }
    if (::fstat(fd, &info) != 0 || info.st_uid != ::geteuid() || (info.st_mode & 077) != 0) {
        ::close(fd);
        why = path + " is not a directory of ours closed to others";
        return -1;
    }
    return fd;
}

std::string usual_directory() {
    const char* runtime = std::getenv("XDG_RUNTIME_DIR");
    return runtime != nullptr && runtime[0] == '/' ? std::string(runtime) + "/maka-eval-relay"
                                                   : "/tmp/maka-eval-relay-" + std::to_string(::geteuid());
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

// The directory's entries (names only), read through a duplicate of the descriptor.
std::vector<std::string> entries_of(int directory) {
    std::vector<std::string> out;
    const int copy = ::fcntl(directory, F_DUPFD_CLOEXEC, 0);
    DIR* listing = copy >= 0 ? ::fdopendir(copy) : nullptr;
    if (listing == nullptr) {
        if (copy >= 0) {
            ::close(copy);
        }
        return out;
    }
    ::rewinddir(listing);
    while (const dirent* e = ::readdir(listing)) {
        const std::string_view name(e->d_name);
        if (name != "." && name != "..") {
            out.emplace_back(name);
        }
    }
    ::closedir(listing);
    return out;
}

// A container's directory and everything in it (only entries of ours: never a link followed).
void remove_container_entry(int directory, const std::string& container_id) {
    const posix::unique_fd entry(open_directory(directory, container_id));
    if (entry) {
        for (const auto& name : entries_of(entry.get())) {
            (void)::unlinkat(entry.get(), name.c_str(), 0);
        }
    }
    (void)::unlinkat(directory, container_id.c_str(), AT_REMOVEDIR);
}

} // namespace

install_record::install_record(std::optional<std::string> directory) {
    const std::string path = directory ? *directory : usual_directory();
    directory_ = open_private(path, unused_because_);
    if (directory_ < 0 && !directory && path != "/tmp/maka-eval-relay-" + std::to_string(::geteuid())) {
        // XDG_RUNTIME_DIR another user's (root after `su` without `-`): the private place in /tmp instead.
        std::string second_reason;
        directory_ = open_private("/tmp/maka-eval-relay-" + std::to_string(::geteuid()), second_reason);
        if (directory_ >= 0) {
            unused_because_.clear();
        } else {
            unused_because_ += "; " + second_reason;
        }
    }
    if (directory_ >= 0) {
        tidy();
    }
}

install_record::install_record(install_record&& other) noexcept
    : directory_(other.directory_), unused_because_(std::move(other.unused_because_)) {
    other.directory_ = -1;
}

install_record::~install_record() {
    if (directory_ >= 0) {
        ::close(directory_);
    }
}

bool install_record::contains(std::string_view container_id, std::string_view helper) const {
    if (directory_ < 0 || !plain_name(container_id) || !plain_name(helper)) {
        return false;
    }
    const posix::unique_fd entry(open_directory(directory_, std::string(container_id)));
    struct stat info {};
    return entry && ::fstatat(entry.get(), std::string(helper).c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 &&
           S_ISREG(info.st_mode);
}

bool install_record::knows(std::string_view container_id) const {
    struct stat info {};
    return directory_ >= 0 && plain_name(container_id) &&
           ::fstatat(directory_, std::string(container_id).c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 &&
           S_ISDIR(info.st_mode);
}

void install_record::add(std::string_view container_id, std::string_view helper) const {
    if (directory_ < 0 || !plain_name(container_id) || !plain_name(helper)) {
        return;
    }
    const std::string id(container_id);
    (void)::mkdirat(directory_, id.c_str(), 0700);
    const posix::unique_fd entry(open_directory(directory_, id));
    if (entry) {
        // Its existence is the record: made and closed at once. The directory's time is the entry's age.
        (void)posix::unique_fd(
            posix::open_retry(std::string(helper), O_WRONLY | O_CREAT | O_NOFOLLOW, 0600, entry.get()));
        (void)::futimens(entry.get(), nullptr);
    }
}

namespace {

// In a container's directory; not a plain name, so never taken for a helper's entry.
constexpr const char* root_trial_entry = ".root-trial";

} // namespace

void install_record::mark_root_trial(std::string_view container_id, std::string_view description) const {
    if (directory_ < 0 || !plain_name(container_id)) {
        return;
    }
    const std::string id(container_id);
    (void)::mkdirat(directory_, id.c_str(), 0700);
    const posix::unique_fd entry(open_directory(directory_, id));
    if (!entry) {
        return;
    }
    // O_EXCL: the first root trial is the one to name; a later one changes nothing about whose it is.
    const posix::unique_fd out(
        posix::open_retry(root_trial_entry, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600, entry.get()));
    if (out) {
        (void)posix::write_all(out.get(), std::string(description) + "\n");
    }
}

std::optional<std::string> install_record::root_trial(std::string_view container_id) const {
    if (directory_ < 0 || !plain_name(container_id)) {
        return std::nullopt;
    }
    const posix::unique_fd entry(open_directory(directory_, std::string(container_id)));
    if (!entry) {
        return std::nullopt;
    }
    const posix::unique_fd in(
        posix::open_retry(root_trial_entry, O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0, entry.get()));
    auto text = in ? posix::read_all(in.get(), 4096) : boost::system::result<std::string>(std::string());
    if (!in || !text) {
        return std::nullopt;
    }
    while (!text->empty() && text->back() == '\n') {
        text->pop_back();
    }
    return text->empty() ? std::string("a root subject's trial") : *text;
}

void install_record::forget(std::string_view container_id) const {
    if (directory_ >= 0 && plain_name(container_id)) {
        remove_container_entry(directory_, std::string(container_id));
    }
}

namespace {

std::string digest_key(const struct stat& info) {
    const auto ns = [](const struct timespec& t) {
        return std::to_string(t.tv_sec) + "." + std::to_string(t.tv_nsec);
    };
    return std::to_string(info.st_dev) + " " + std::to_string(info.st_ino) + " " +
           std::to_string(info.st_size) + " " + ns(info.st_mtim) + " " + ns(info.st_ctim);
}

} // namespace

std::optional<std::string> install_record::remembered_digest(const struct stat& info,
                                                             std::string_view memo_name) const {
    if (directory_ < 0) {
        return std::nullopt;
    }
    const posix::unique_fd memo(
        posix::open_retry(std::string(memo_name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK, 0, directory_));
    if (!memo) {
        return std::nullopt;
    }
    const auto text = posix::read_all(memo.get(), 512);
    const std::string prefix = digest_key(info) + " ";
    // KEY SHA256\n, the digest 64 lowercase hex digits.
    if (!text || !text->starts_with(prefix) || text->size() != prefix.size() + 65 || text->back() != '\n') {
        return std::nullopt;
    }
    std::string digest = text->substr(prefix.size(), 64);
    if (digest.find_first_not_of("0123456789abcdef") != std::string::npos) {
        return std::nullopt;
    }
    return digest;
}

void install_record::remember_digest(const struct stat& info, const std::string& digest,
                                     std::string_view memo_name) const {
    const auto changed = std::chrono::system_clock::from_time_t(info.st_ctim.tv_sec);
    if (directory_ < 0 || digest.size() != 64 ||
        std::chrono::system_clock::now() - changed < std::chrono::seconds(2)) {
        return;
    }
    // Written aside and renamed over the entry: a reader sees the old line or the new one, whole.
    const std::string staged = std::string(memo_name) + "." + std::to_string(::getpid());
    const std::string line = digest_key(info) + " " + digest + "\n";
    bool written = false;
    {
        const posix::unique_fd out(
            posix::open_retry(staged, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600, directory_));
        written = out && posix::write_all(out.get(), line);
    }
    if (!written || ::renameat(directory_, staged.c_str(), directory_, std::string(memo_name).c_str()) != 0) {
        (void)::unlinkat(directory_, staged.c_str(), 0);
    }
}

void install_record::tidy() const {
    struct stat info {};
    const auto now = std::chrono::system_clock::now();
    const auto age = [&now, &info] { return now - std::chrono::system_clock::from_time_t(info.st_mtime); };
    if (::fstatat(directory_, tidied_marker, &info, AT_SYMLINK_NOFOLLOW) == 0 && age() < tidy_interval) {
        return;
    }
    (void)posix::unique_fd(
        posix::open_retry(tidied_marker, O_WRONLY | O_CREAT | O_NOFOLLOW, 0600, directory_));
    (void)::utimensat(directory_, tidied_marker, nullptr, AT_SYMLINK_NOFOLLOW);
    for (const auto& name : entries_of(directory_)) {
        if (name == tidied_marker || ::fstatat(directory_, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) != 0) {
            continue;
        }
        const auto plus = name.find('+');
        if (S_ISREG(info.st_mode) && plus != std::string::npos) {
            // An entry of the flat layout before this one (`ID+HELPER`): moved into its container's
            // directory, so that knows() stays true where a trial ran before the upgrade.
            if (age() <= entry_lifetime) {
                add(name.substr(0, plus), name.substr(plus + 1));
            }
            (void)::unlinkat(directory_, name.c_str(), 0);
        } else if (S_ISDIR(info.st_mode) && age() > entry_lifetime) {
            remove_container_entry(directory_, name);
        }
    }
}

} // namespace maka_eval::relay
