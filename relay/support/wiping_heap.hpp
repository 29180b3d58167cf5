// The relay's heap overwrites every block it frees (wiping_heap.cpp says why and what is left to owners).
#pragma once

namespace maka_eval::relay {

// OpenSSL's frees wiped too; false when OpenSSL has already allocated (main() calls this first of all).
bool wipe_openssl_frees() noexcept;

} // namespace maka_eval::relay
