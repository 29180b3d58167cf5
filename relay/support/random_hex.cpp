// Random hex from the kernel's CSPRNG (see random_hex.hpp).
//
// getrandom(2), not OpenSSL's RAND_bytes: the first RAND_bytes loads OpenSSL's configuration and
// instantiates its DRBG (seeded from getrandom itself), 1.5 ms of every trial's start for 40 bytes. The
// kernel's generator is what OpenSSL would have drawn from, one system call away; it blocks only until the
// pool is initialized at boot.
#include "relay/support/random_hex.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <sys/random.h>

namespace maka_eval::relay {

std::string random_hex(std::size_t bytes) {
    std::string raw(bytes, '\0');
    std::size_t filled = 0;
    while (filled < bytes) {
        const ssize_t got = ::getrandom(raw.data() + filled, bytes - filled, 0);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            throw std::runtime_error(std::string("the kernel's random generator failed: ") +
                                     std::strerror(errno));
        }
        filled += static_cast<std::size_t>(got);
    }
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(2 * bytes);
    for (const char c : raw) {
        const auto byte = static_cast<unsigned char>(c);
        out.push_back(digits[byte >> 4U]);
        out.push_back(digits[byte & 0xFU]);
    }
    return out;
}

} // namespace maka_eval::relay
