// Every block of memory the relay frees is overwritten first: C++'s (operator delete, all of its forms) and
// OpenSSL's (CRYPTO_set_mem_functions, which covers the TLS records a remote engine's `run` passes through).
//
// Why the heap and not each secret's owner: a credential crosses many buffers on its way from where the relay
// reads it to the byte written to the helper — the orchestrator's line as it is read, the JSON parser's and
// serializer's storage, the `execute` request, the `run` line, the stream it is written to — and each
// std::string that grows leaves its old buffer behind in malloc's free lists. Wiping at each owner misses
// the copies nobody owns (a reallocation, a parser's scratch); here no freed block keeps a byte of anything.
// What is left to the owners: live values (wiped when destroyed, as every block is) and the few bytes a
// short string holds inline on the stack (secret_text wipes its own; docs/security.md says what holds).
//
// The cost is one OPENSSL_cleanse of each freed block, at memory speed: the relay frees little on a trial's
// path (bench/run.sh's cold and masking rows measure it).
//
// Linked into maka-eval-relay (and the tests that check it) as an object of its own: a replacement of the
// global operator new in a static library would only be used when something else pulled its object in.
#include "relay/support/wiping_heap.hpp"

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <new>

#include <openssl/crypto.h>

namespace {

void cleanse_and_free(void* block) noexcept {
    if (block != nullptr) {
        OPENSSL_cleanse(block, ::malloc_usable_size(block));
        std::free(block); // NOLINT(cppcoreguidelines-no-malloc): the heap itself
    }
}

void* allocate(std::size_t size, std::size_t alignment) {
    while (true) {
        void* block = nullptr;
        if (alignment <= alignof(std::max_align_t)) {
            block = std::malloc(size == 0 ? 1 : size); // NOLINT(cppcoreguidelines-no-malloc)
        } else if (::posix_memalign(&block, alignment, size == 0 ? 1 : size) != 0) {
            block = nullptr;
        }
        if (block != nullptr) {
            return block;
        }
        const std::new_handler handler = std::get_new_handler();
        if (handler == nullptr) {
            throw std::bad_alloc();
        }
        handler();
    }
}

void* allocate_or_null(std::size_t size, std::size_t alignment) noexcept {
    try {
        return allocate(size, alignment);
    } catch (...) {
        return nullptr;
    }
}

// OpenSSL's three, with the file and line it passes for its own debugging.
void* openssl_malloc(std::size_t size, const char* /*file*/, int /*line*/) {
    return std::malloc(size); // NOLINT(cppcoreguidelines-no-malloc)
}

void* openssl_realloc(void* block, std::size_t size, const char* /*file*/, int /*line*/) {
    if (block == nullptr) {
        return std::malloc(size); // NOLINT(cppcoreguidelines-no-malloc)
    }
    // Moved by hand, so that the old block is wiped before malloc may hand it out again.
    void* moved = std::malloc(size); // NOLINT(cppcoreguidelines-no-malloc)
    if (moved == nullptr) {
        return nullptr; // the old block stays, as realloc's contract says
    }
    const std::size_t old = ::malloc_usable_size(block);
    std::memcpy(moved, block, old < size ? old : size);
    cleanse_and_free(block);
    return moved;
}

void openssl_free(void* block, const char* /*file*/, int /*line*/) {
    cleanse_and_free(block);
}

} // namespace

namespace maka_eval::relay {

bool wipe_openssl_frees() noexcept {
    // Refused once OpenSSL has allocated anything: main() calls this first.
    return CRYPTO_set_mem_functions(openssl_malloc, openssl_realloc, openssl_free) == 1;
}

} // namespace maka_eval::relay

// NOLINTBEGIN(misc-new-delete-overloads,cert-dcl54-cpp,hicpp-new-delete-operators): all of them, on purpose
void* operator new(std::size_t size) {
    return allocate(size, 0);
}
void* operator new[](std::size_t size) {
    return allocate(size, 0);
}
void* operator new(std::size_t size, const std::nothrow_t& /*tag*/) noexcept {
    return allocate_or_null(size, 0);
}
void* operator new[](std::size_t size, const std::nothrow_t& /*tag*/) noexcept {
    return allocate_or_null(size, 0);
}
void* operator new(std::size_t size, std::align_val_t alignment) {
    return allocate(size, static_cast<std::size_t>(alignment));
}
void* operator new[](std::size_t size, std::align_val_t alignment) {
    return allocate(size, static_cast<std::size_t>(alignment));
}
void* operator new(std::size_t size, std::align_val_t alignment, const std::nothrow_t& /*tag*/) noexcept {
    return allocate_or_null(size, static_cast<std::size_t>(alignment));
}
void* operator new[](std::size_t size, std::align_val_t alignment, const std::nothrow_t& /*tag*/) noexcept {
    return allocate_or_null(size, static_cast<std::size_t>(alignment));
}
void operator delete(void* block) noexcept {
    cleanse_and_free(block);
}
void operator delete[](void* block) noexcept {
    cleanse_and_free(block);
}
void operator delete(void* block, std::size_t /*size*/) noexcept {
    cleanse_and_free(block);
}
void operator delete[](void* block, std::size_t /*size*/) noexcept {
    cleanse_and_free(block);
}
void operator delete(void* block, const std::nothrow_t& /*tag*/) noexcept {
    cleanse_and_free(block);
}
void operator delete[](void* block, const std::nothrow_t& /*tag*/) noexcept {
    cleanse_and_free(block);
}
void operator delete(void* block, std::align_val_t /*alignment*/) noexcept {
    cleanse_and_free(block);
}
void operator delete[](void* block, std::align_val_t /*alignment*/) noexcept {
    cleanse_and_free(block);
}
void operator delete(void* block, std::size_t /*size*/, std::align_val_t /*alignment*/) noexcept {
    cleanse_and_free(block);
}
void operator delete[](void* block, std::size_t /*size*/, std::align_val_t /*alignment*/) noexcept {
    cleanse_and_free(block);
}
void operator delete(void* block, std::align_val_t /*alignment*/, const std::nothrow_t& /*tag*/) noexcept {
    cleanse_and_free(block);
}
void operator delete[](void* block, std::align_val_t /*alignment*/, const std::nothrow_t& /*tag*/) noexcept {
    cleanse_and_free(block);
}
// NOLINTEND(misc-new-delete-overloads,cert-dcl54-cpp,hicpp-new-delete-operators)
