// Private files and whole-file digests (see private_file.hpp).
#include "relay/support/private_file.hpp"

#include "contracts/digest.hpp"
#include "posix/io.hpp"

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

namespace maka_eval::relay {

boost::system::result<std::string, private_file_error> read_private_file(const std::string& path,
                                                                         std::size_t limit) {
    const auto failed = [](private_file_fault fault, const struct stat& info,
                           boost::system::error_code error) {
        return private_file_error{fault, error, info};
    };
    struct stat info {};
    const posix::unique_fd fd(posix::open_retry(path, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK));
    if (!fd || ::fstat(fd.get(), &info) != 0) {
        return failed(private_file_fault::unopenable, info, {errno, boost::system::system_category()});
    }
    if (!S_ISREG(info.st_mode)) {
        return failed(private_file_fault::not_regular, info, {});
    }
    if (info.st_uid != ::geteuid()) {
        return failed(private_file_fault::not_ours, info, {});
    }
    if ((info.st_mode & 077U) != 0) {
        return failed(private_file_fault::shared, info, {});
    }
    // EINTR-safe, the read buffer wiped; a file past the limit is an error, never silently cut.
    auto text = posix::read_all(fd.get(), limit, posix::contents::secret);
    if (!text) {
        return failed(private_file_fault::unreadable, info, text.error());
    }
    return std::move(*text);
}

std::optional<std::string> file_sha256(const std::string& path, int flags) {
    const posix::unique_fd fd(posix::open_retry(path, O_RDONLY | flags));
    if (!fd) {
        return std::nullopt;
    }
    (void)::posix_fadvise(fd.get(), 0, 0, POSIX_FADV_SEQUENTIAL);
    contracts::sha256 sha;
    std::string buffer(std::size_t{1} << 20U, '\0');
    while (true) {
        const ssize_t got = posix::read_retry(fd.get(), buffer.data(), buffer.size());
        if (got < 0) {
            return std::nullopt;
        }
        if (got == 0) {
            return sha.hex();
        }
        sha.update(std::string_view(buffer.data(), static_cast<std::size_t>(got)));
    }
}

} // namespace maka_eval::relay
