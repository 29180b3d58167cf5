// Work the trial does not wait for, on a thread of its own that gives way to the trial's.
//
// The relay reads its signing key and hashes its own binary while the trial runs, so that neither is on
// the path to `started`. On this project's 2-core machines the trial's own path (the relay's thread, the
// helper, the engine's processes) can use both cores at once, and a background thread of equal weight
// delayed it by about its own CPU time. At nice 19 it still runs (CFS gives it a small share, never none, so
// a busy host cannot starve it) but yields the core whenever the trial's work wants it.
#pragma once

#include <future>
#include <sys/resource.h>
#include <unistd.h>
#include <utility>

namespace maka_eval::relay {

template <class Work>
[[nodiscard]] auto in_background(Work work) {
    return std::async(std::launch::async, [work = std::move(work)]() mutable {
        // This thread only (Linux takes a thread id here); a failure leaves it at the process's own weight.
        (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), 19);
        return work();
    });
}

} // namespace maka_eval::relay
