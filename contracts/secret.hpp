// Overwriting secrets in memory once they are no longer needed (credentials, `run` requests, tokens).
//
// OPENSSL_cleanse, unlike memset or std::fill, cannot be optimised away for a buffer about to be freed.
#pragma once

#include <string>

namespace maka_eval::contracts {

// Overwrites the whole buffer (size, not only the text) and empties the string.
void wipe(std::string& secret) noexcept;

} // namespace maka_eval::contracts
