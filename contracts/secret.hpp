// Overwriting secrets in memory once they are no longer needed (credentials, `run` requests, tokens).
//
// OPENSSL_cleanse, unlike memset or std::fill, cannot be optimised away for a buffer about to be freed.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace maka_eval::contracts {

// Overwrites the whole buffer (size, not only the text) and empties the string.
void wipe(std::string& secret) noexcept;
// Wipes every value of NAME=VALUE pairs (contracts::variables: environments, credentials); names stay.
void wipe_values(std::vector<std::pair<std::string, std::string>>& variables) noexcept;

} // namespace maka_eval::contracts
