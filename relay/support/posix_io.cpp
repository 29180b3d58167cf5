// The relay's whole reads and writes (see posix_io.hpp).
#include "relay/support/posix_io.hpp"

#include "contracts/secret.hpp"

#include <cerrno>
#include <unistd.h>

#include <openssl/crypto.h>

namespace maka_eval::relay {

bool write_all(int fd, std::string_view data) {
    while (!data.empty()) {
        const auto wrote = ::write(fd, data.data(), data.size());
        if (wrote < 0 && errno == EINTR) {
            continue;
        }
        if (wrote <= 0) {
            // A write that takes nothing would loop for ever: a failure, as in_container/io's is.
            if (wrote == 0) {
                errno = EIO;
            }
            return false;
        }
        data.remove_prefix(static_cast<std::size_t>(wrote));
    }
    return true;
}

boost::system::result<std::string> read_secret(int fd, std::size_t limit) {
    std::string text;
    char chunk[4096];
    boost::system::error_code failed;
    while (true) {
        const auto got = ::read(fd, chunk, sizeof chunk);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got < 0) {
            failed.assign(errno, boost::system::generic_category());
            break;
        }
        if (got == 0) {
            break;
        }
        if (text.size() + static_cast<std::size_t>(got) > limit) {
            failed = make_error_code(boost::system::errc::file_too_large);
            break;
        }
        text.append(chunk, static_cast<std::size_t>(got));
    }
    ::OPENSSL_cleanse(chunk, sizeof chunk);
    if (failed) {
        contracts::wipe(text);
        return failed;
    }
    return text;
}

} // namespace maka_eval::relay
