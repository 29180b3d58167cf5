// Secret wiping over OpenSSL (see secret.hpp).
#include "contracts/secret.hpp"

#include <openssl/crypto.h>

namespace maka_eval::contracts {

void wipe(std::string& secret) noexcept {
    OPENSSL_cleanse(secret.data(), secret.size());
    secret.clear();
}

} // namespace maka_eval::contracts
