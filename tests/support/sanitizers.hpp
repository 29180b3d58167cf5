// Whether this test binary is built with AddressSanitizer (gcc's __SANITIZE_ADDRESS__, clang's feature).
#pragma once

namespace maka_eval::test {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool under_address_sanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
inline constexpr bool under_address_sanitizer = true;
#else
inline constexpr bool under_address_sanitizer = false;
#endif
#else
inline constexpr bool under_address_sanitizer = false;
#endif

// Why a test that reads a process's whole writable memory skips under it.
inline constexpr const char* memory_scan_needs_release =
    "AddressSanitizer reserves terabytes of writable address space (its shadow, its allocator), which "
    "cannot be read through /proc/PID/mem in a test's time: the release build runs this test";

} // namespace maka_eval::test
