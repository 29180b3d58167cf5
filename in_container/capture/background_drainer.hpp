// After the subject is settled, processes it left running may still hold its output pipes. Closing our
// ends would kill those writers with SIGPIPE, which is not "left alone"; instead a detached child process,
// the drainer, keeps appending what they write to the artifacts (masked, up to the limit) until the pipes
// close. The supervisor reports meanwhile; the receipt says the files were still being written.
#pragma once

#include "in_container/capture/captured_stream.hpp"

#include <initializer_list>
#include <sys/types.h>

namespace maka_eval::in_container {

// Forks the drainer for whichever of `out` and `err` is still open, and closes our ends. `close_in_child`:
// descriptors the drainer must not hold (the signalfd, the trial lock: the next trial may start while this
// one's leftovers still write). The drainer's pid, or -1 when nothing was left to drain (or fork failed).
pid_t drain_in_background(captured_stream& out, captured_stream& err,
                          std::initializer_list<int> close_in_child);

} // namespace maka_eval::in_container
