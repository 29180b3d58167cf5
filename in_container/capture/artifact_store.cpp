// The artifacts' staging and publication (see artifact_store.hpp).
#include "in_container/capture/artifact_store.hpp"

#include "contracts/limits.hpp"
#include "in_container/base/io.hpp"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace maka_eval::in_container {
boost::system::result<artifact_store, std::string> artifact_store::open(const std::string& path,
                                                                        gid_t group) {
    const auto failed = [&path](int error) {
        // A read-only root (docker run --read-only) is a setting the operator can change: say which.
        return path + ": " +
               (error == ELOOP || error == ENOTDIR ? "not a directory (a symbolic link?)"
                : error == EROFS ? std::string(std::strerror(error)) + " (give the container a writable " +
                                       path + ": a volume or a tmpfs there)"
                                 : std::strerror(error));
    };
    const int directory = open_directory_creating(path, 0700);
    if (directory < 0) {
        return failed(errno);
    }
    if (::geteuid() != 0) {
        return artifact_store(directory, -1, {}, group);
    }
    std::string name = std::string(contracts::staging_directory_prefix) + unique_suffix();
    if (::mkdirat(directory, name.c_str(), 0700) != 0) {
        const int error = errno;
        ::close(directory);
        return failed(error);
    }
    const int staging = open_retry(name, O_PATH | O_DIRECTORY | O_NOFOLLOW, 0, directory);
    if (staging < 0) {
        const int error = errno;
        ::close(directory);
        return failed(error);
    }
    return artifact_store(directory, staging, std::move(name), group);
}

artifact_store::artifact_store(artifact_store&& other) noexcept
    : directory_(other.directory_), staging_(other.staging_), staging_name_(std::move(other.staging_name_)),
      group_(other.group_) {
    other.directory_ = -1;
    other.staging_ = -1;
}

artifact_store::~artifact_store() {
    for (const int fd : {directory_, staging_}) {
        if (fd >= 0) {
            ::close(fd);
        }
    }
}

int artifact_store::create(std::string_view name_view, std::size_t reserve) const {
    const std::string name(name_view);
    if (staging_ < 0) {
        // A fresh inode every trial: a descriptor an earlier trial kept (a leftover process, an old drainer)
        // can never write into this trial's file.
        if (::unlinkat(directory_, name.c_str(), 0) != 0 && errno != ENOENT) {
            return -1;
        }
    } else {
        // The earlier trial's file goes now, as it did in place; what is not a plain file waits for publish.
        struct stat info {};
        if (::fstatat(directory_, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(info.st_mode)) {
            (void)::unlinkat(directory_, name.c_str(), 0);
        }
    }
    const int fd = open_retry(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK, 0640,
                              staging_ >= 0 ? staging_ : directory_);
    if (fd >= 0 && ::geteuid() == 0 && group_ != 0) {
        (void)::fchown(fd, 0, group_);
    }
    if (fd >= 0 && reserve > 0) {
        (void)::fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, static_cast<off_t>(reserve)); // best effort
    }
    return fd;
}

bool artifact_store::publish(std::string_view name_view) const {
    if (staging_ < 0) {
        return true;
    }
    const std::string name(name_view);
    if (::renameat(staging_, name.c_str(), directory_, name.c_str()) == 0) {
        return true;
    }
    if (errno != EISDIR && errno != ENOTEMPTY && errno != EEXIST) {
        return false;
    }
    // A directory planted at the name: moved aside (it may hold what someone wants to look at), then ours.
    const auto aside = move_aside(directory_, name);
    if (!aside) {
        return false;
    }
    log_line("moved a directory found at " + name + " aside to " + *aside);
    return ::renameat(staging_, name.c_str(), directory_, name.c_str()) == 0;
}

void artifact_store::finish() const {
    // The renames are durable once the directory is: an O_PATH descriptor cannot be synced, a reopen can.
    const int readable = open_retry(".", O_RDONLY | O_DIRECTORY, 0, directory_);
    if (readable >= 0) {
        (void)::fsync(readable);
        ::close(readable);
    }
    if (staging_ >= 0) {
        // By name: if the subject renamed it, it stays (empty, root's, harmless).
        (void)::unlinkat(directory_, staging_name_.c_str(), AT_REMOVEDIR);
    }
}

} // namespace maka_eval::in_container
