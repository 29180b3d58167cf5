// Secret wiping over OpenSSL (see secret.hpp).
#include "contracts/secret.hpp"

#include <openssl/crypto.h>

namespace maka_eval::contracts {

void wipe(std::string& secret) noexcept {
    OPENSSL_cleanse(secret.data(), secret.size());
    secret.clear();
}

void wipe_values(std::vector<std::pair<std::string, std::string>>& variables) noexcept {
    for (auto& entry : variables) {
        wipe(entry.second);
    }
}

} // namespace maka_eval::contracts
