// Unpredictable names and tokens: relay tokens and result tokens for `run`, request file names in a
// container.
#pragma once

#include <cstddef>
#include <string>

namespace maka_eval::relay {

// 2 × `bytes` lowercase hex characters from the kernel's CSPRNG (getrandom); throws std::runtime_error if it
// fails (callers run in a coroutine whose completion handler reports it).
[[nodiscard]] std::string random_hex(std::size_t bytes);

} // namespace maka_eval::relay
