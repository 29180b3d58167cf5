// SHA-256 over OpenSSL's SHA256_* functions, incremental and copyable, with the lowercase hex form every
// message carries.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace maka_eval::contracts {

class sha256 {
  public:
    sha256();
    // A copy carries the running state: two streams that agree up to here go on from one computation.
    sha256(const sha256& other);
    sha256& operator=(const sha256& other);
    sha256(sha256&&) noexcept = default;
    sha256& operator=(sha256&&) noexcept = default;
    ~sha256() = default;
    void update(std::string_view bytes);
    // Lowercase hex of the digest of everything fed so far; the running state is left untouched.
    [[nodiscard]] std::string hex() const;
    // The digest of everything fed so far followed by `more`; the running state is left untouched.
    [[nodiscard]] std::string hex_after(std::string_view more) const;

  private:
    struct context_deleter {
        void operator()(void* context) const noexcept;
    };
    std::unique_ptr<void, context_deleter> context_;
};

[[nodiscard]] std::string sha256_hex(std::string_view bytes);

} // namespace maka_eval::contracts
