// maka-eval-relay entry point: arguments to views, exceptions to a message and exit code 1.
#include "relay/cli/commands.hpp"
#include "relay/support/exit_codes.hpp"
#include "relay/support/wiping_heap.hpp"

#include <exception>
#include <iostream>
#include <malloc.h>
#include <string_view>
#include <sys/prctl.h>
#include <vector>

#include <openssl/crypto.h>

int main(int argc, char** argv) {
    // Before OpenSSL allocates anything: its freed blocks wiped like every other (wiping_heap.cpp).
    (void)maka_eval::relay::wipe_openssl_frees();
    // The relay holds credentials and tokens: no core file of it, no ptrace by another process of its user.
    (void)::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    // malloc keeps what is freed (no mmap per large block, no trim at the top): an `execute` of megabytes
    // (credentials) is parsed, copied into `run` and written out, each step reusing the pages the one
    // before faulted in instead of faulting fresh ones (a page fault is the costly part of moving bytes,
    // more so in a VM). Peak memory is unchanged; what a finished step freed stays with the process.
    (void)::mallopt(M_MMAP_THRESHOLD, 64 << 20);
    (void)::mallopt(M_TRIM_THRESHOLD, 64 << 20);
    // No OpenSSL clean-up at exit: it frees every method a signed trial fetched, one by one (callgrind: 1 M
    // instructions, more than the signature), memory the process hands back whole a moment later. Keys are
    // cleansed by their own destructors, not by this clean-up.
    (void)OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, nullptr);
    try {
        const std::vector<std::string_view> args(argv + 1, argv + argc);
        return maka_eval::relay::run_cli(args);
    } catch (const std::exception& error) {
        std::cerr << "maka-eval-relay: fatal: " << error.what() << "\n";
        return maka_eval::relay::exit_internal;
    }
}
