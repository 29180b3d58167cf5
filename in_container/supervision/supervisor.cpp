// The supervisor's poll loop and settle state machine (see supervisor.hpp). Its parts live beside it: the
// captured output (captured_stream), the artifacts and their receipt (trial_artifacts), the drainer
// (background_drainer), the process tree it signals (subject_tree) and the usage it measures (usage_meter).
#include "in_container/supervision/supervisor.hpp"

#include "contracts/limits.hpp"
#include "contracts/proc_status.hpp"
#include "contracts/result_frame.hpp"
#include "contracts/secret.hpp"
#include "contracts/secret_mask.hpp"
#include "in_container/base/io.hpp"
#include "in_container/base/signals.hpp"
#include "in_container/capture/background_drainer.hpp"
#include "in_container/capture/captured_stream.hpp"
#include "in_container/capture/follow_output.hpp"
#include "in_container/capture/subject_input.hpp"
#include "in_container/capture/trial_artifacts.hpp"
#include "in_container/process/fork_events.hpp"
#include "in_container/process/identity.hpp"
#include "in_container/process/oom_score.hpp"
#include "in_container/process/root_state.hpp"
#include "in_container/process/scope_file.hpp"
#include "in_container/process/spawn.hpp"
#include "in_container/process/subject_tree.hpp"
#include "in_container/supervision/usage_meter.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <malloc.h>
#include <optional>
#include <poll.h>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace maka_eval::in_container {
namespace {

using clock_type = std::chrono::steady_clock;
using contracts::report_message;
using contracts::run_request;

std::uint64_t ms_between(clock_type::time_point a, clock_type::time_point b) {
    return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count());
}

std::string signal_name(int sig) {
    const char* abbrev = ::sigabbrev_np(sig);
    return abbrev != nullptr ? abbrev : std::to_string(sig);
}

class supervision {
  public:
    supervision(run_request& request, const supervisor_io& io) : request_(request), io_(io) {
        // What the subject writes is hashed once: the carriers use the streams' digests until the repair
        // of invalid UTF-8 first changes a byte (result_frame.hpp).
        carrier_.follow(artifacts_.out.digest);
        stderr_carrier_.follow(artifacts_.err.digest);
    }
    ~supervision() = default;
    supervision(const supervision&) = delete;
    supervision& operator=(const supervision&) = delete;

    boost::system::result<report_message, supervision_error> run();

  private:
    enum class phase { running, draining, terminating, killing, done };

    // Before the subject: its user, the root-only state, the scope record's place, the trial lock, the
    // leftovers of earlier trials, the artifacts.
    boost::system::result<void, supervision_error> prepare();
    void build_maskers();
    std::vector<std::string> subject_environment() const;
    // The poll loop (ninja's DoWork shape: wait for any source, hand each ready one to its handler, then
    // the timers) and its handlers.
    void loop();
    void on_signals();
    void on_control();
    void process_control(); // the lines already buffered
    void on_children();
    void on_stream(captured_stream& stream, bool is_stdout);
    // Bytes that went on to the subject's stdin, said to the relay so that it may send more.
    void report_taken(std::uint64_t bytes);
    // The raw bytes of the `input` being received, as far as they have arrived; true once all have.
    bool take_input();
    void on_timer(clock_type::time_point now);
    // The settle state machine: running → terminating (TERM grace) → killing (KILL grace) → draining →
    // done; a subject that exits on its own goes running → draining → done.
    void settle(const std::string& reason);
    void leader_exited(int code, bool killed);
    // A child of ours other than the leader has exited: reaped, and its usage counted when the subject's.
    void reaped_other(pid_t pid);
    void counted(pid_t pid, const rusage& usage);
    // On the host's PID namespace: every process of the subject's tree alive now is counted as seen.
    void census();
    void start_draining(std::uint32_t ms);
    void hand_off_streams();
    [[nodiscard]] bool streams_closed() const { return artifacts_.out.fd < 0 && artifacts_.err.fd < 0; }
    [[nodiscard]] bool scope_quiet() const { return tree_.quiet(leader_gone_); }
    report_message report();

    // What one read of a subject's pipe takes at most: a quarter of the pipe we ask for.
    static constexpr std::size_t capture_chunk_bytes = std::size_t{256} << 10U;

    run_request& request_;
    const supervisor_io& io_;
    trial_artifacts artifacts_;
    std::unique_ptr<char[]> read_buffer_ = std::make_unique<char[]>(capture_chunk_bytes);
    contracts::carrier carrier_;
    contracts::carrier stderr_carrier_; // its size and digest: the diagnostic counts stderr as noise
    spawn_outcome spawned_;
    subject_tree tree_;
    usage_meter usage_;
    fork_events forks_; // on the host's PID namespace, where the kernel lets us listen (fork_events.hpp)
    phase phase_ = phase::running;
    std::optional<clock_type::time_point> deadline_;
    clock_type::time_point started_at_;
    clock_type::time_point exited_at_;
    clock_type::time_point settle_started_;
    clock_type::time_point settled_at_;
    bool leader_gone_ = false;
    int exit_code_ = 0;
    int death_signal_ = 0;
    bool settling_ = false;
    bool quiesced_ = true;
    std::string reason_;
    std::optional<policy::subject_identity> identity_;
    std::optional<std::string> state_directory_; // root-only, when we are root
    pid_t drainer_ = -1;
    std::optional<follow_output> follow_; // session mode with `follow`: output to the relay as it comes
    subject_input input_;                 // run -i / -t: the subject's stdin the relay feeds
    std::uint64_t input_owed_ = 0;        // bytes of the last `input` still to come after its line
    std::uint64_t input_untold_ = 0;      // taken, not yet reported in `input-taken`
    posix::unique_fd lock_fd_;            // one trial at a time (lock_trial), held while we supervise
    scope_place scope_;                   // the scope record's directory (opened without links) and name
};

boost::system::result<void, supervision_error> supervision::prepare() {
    if (!request_.user.empty()) {
        auto identity = resolve_subject_user(request_.user);
        if (!identity) {
            return supervision_error{contracts::helper_fault::spawn_failed, identity.error()};
        }
        identity_ = std::move(*identity);
    }
    // The root-only directory, looked up (and made) once, and only when something needs it: the record of
    // leftovers, and the scope of a subject of another uid, which must not delete or rewrite what a cancel
    // relies on. (On the relay's own host, as root, nothing is recorded there.)
    const bool other_uid = identity_ && identity_->uid != ::geteuid();
    if (!request_.keep_leftovers || other_uid) {
        state_directory_ = root_state_directory();
    }
    if (other_uid && !state_directory_) {
        // Never the silent fallback into /logs/agent, where the subject could forge what a root cancel acts
        // on.
        return supervision_error{contracts::helper_fault::spawn_failed,
                                 "no root-only directory for the scope record (/run/maka-eval, "
                                 "/tmp/.maka-eval-state: missing, not root's, or read-only): a subject of "
                                 "another user could forge it"};
    }
    if (state_directory_ && other_uid) {
        request_.scope_path = scope_location(*state_directory_, request_.scope_path);
    }
    // The scope record's place, opened once (scope_file.hpp). Where it cannot be made for a reason other
    // than a link (a read-only /logs), the original's answer stands (exit 111, execution-scope-unavailable).
    auto place = open_scope_place(request_.scope_path);
    if (!place) {
        return supervision_error{contracts::helper_fault::spawn_failed, place.error()};
    }
    scope_ = std::move(*place);
    const std::string artifacts =
        request_.artifacts_dir.empty() ? std::string(contracts::artifacts_directory) : request_.artifacts_dir;
    if (const auto state = state_directory_ ? state_directory_ : root_state_directory()) {
        lock_fd_ = posix::unique_fd(lock_trial(*state, artifacts));
        if (!lock_fd_ && errno == EWOULDBLOCK) {
            return supervision_error{contracts::helper_fault::spawn_failed,
                                     "another trial is already running in this environment (with " +
                                         artifacts +
                                         "): one at a time, or the artifacts of both would be lost"};
        }
    }
    // What an earlier trial's subject left running is stopped before anything of this trial exists.
    if (state_directory_ && !request_.keep_leftovers) {
        (void)stop_leftovers(*state_directory_); // the session's look before `hello` (if any) said what stays
    }
    if (auto opened =
            artifacts_.open(artifacts, identity_ ? identity_->gid : ::getgid(), request_.artifact_limit);
        !opened) {
        return supervision_error{contracts::helper_fault::artifacts_unavailable,
                                 "Maka Eval could not prepare subject artifact output: " + opened.error()};
    }
    return {};
}

// Every credential's value, and the values of the environment entries `mask` names, masked out of both
// artifacts and the live output (secret_mask.hpp). Built once the subject has started, before its first
// byte is read: the subject's start never waits for it, and its memory is not in what the subject inherits
// at fork (the usage report's peak RSS). The values are wiped right after.
void supervision::build_maskers() {
    std::vector<std::string_view> secrets;
    for (const auto& [name, value] : request_.credentials) {
        secrets.emplace_back(value);
    }
    for (const auto& [name, value] : request_.environment) {
        if (std::find(request_.mask.begin(), request_.mask.end(), name) != request_.mask.end()) {
            secrets.emplace_back(value);
        }
    }
    const contracts::secret_masker masker(secrets);
    if (masker.skipped() > 0) {
        log_line(std::to_string(masker.skipped()) + " secret value(s) shorter than " +
                 std::to_string(contracts::secret_masker::min_secret_bytes) +
                 " bytes cannot be masked in the output");
    }
    if (!masker.empty()) {
        artifacts_.mask_with(masker);
    }
}

std::vector<std::string> supervision::subject_environment() const {
    // The helper's own environment, then `execute`'s environment, credentials and result token (later wins).
    std::vector<std::string> env;
    auto set = [&env](std::string_view name, std::string_view value) {
        std::string entry;
        entry.reserve(name.size() + 1 + value.size()); // one copy of the value (it may be kilobytes)
        entry.append(name).append("=");
        const std::string_view prefix = entry;
        std::erase_if(env, [&](const std::string& other) { return other.starts_with(prefix); });
        entry.append(value);
        env.push_back(std::move(entry));
    };
    for (char** entry = environ; *entry != nullptr; ++entry) {
        env.emplace_back(*entry);
    }
    // This helper's own path: the relay installs it where it chooses in each container (not on PATH), and a
    // subject prints its result frame with it. `execute`'s environment may still say otherwise.
    char self[PATH_MAX];
    const ssize_t self_size = ::readlink("/proc/self/exe", self, sizeof self);
    const std::string_view self_path(self, self_size > 0 ? static_cast<std::size_t>(self_size) : 0);
    if (!self_path.empty() && static_cast<std::size_t>(self_size) < sizeof self &&
        !self_path.ends_with(" (deleted)")) {
        set(contracts::helper_path_variable, self_path);
    }
    if (identity_) {
        // What a login as that user would set; `execute`'s environment may still say otherwise.
        set("HOME", identity_->home);
        if (!identity_->name.empty()) {
            set("USER", identity_->name);
            set("LOGNAME", identity_->name);
        }
    }
    for (const auto& [name, value] : request_.environment) {
        set(name, value);
    }
    for (const auto& [name, value] : request_.credentials) {
        set(name, value);
    }
    set(contracts::result_token_variable, request_.result_token);
    return env;
}

// One sentence on a directory the subject's user may not enter, with what makes it so (its mode and owner).
std::string refused_directory_sentence(const std::string& directory,
                                       const std::optional<policy::subject_identity>& identity) {
    std::string user = identity ? "uid " + std::to_string(identity->uid) : std::string("the subject's user");
    std::string why;
    struct stat st {};
    if (::stat(directory.c_str(), &st) == 0) {
        char mode[8];
        (void)std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777U));
        why = " (mode " + std::string(mode) + ", owner " + std::to_string(st.st_uid) + ":" +
              std::to_string(st.st_gid) + ")";
    }
    return "the subject cannot start: its user (" + user + ") may not enter " + directory + why +
           ", the container's filesystem refuses it (as rootless Podman's vfs storage does with an image's "
           "/); "
           "run it as root, or give " +
           directory + " search permission (chmod o+x)";
}

boost::system::result<report_message, supervision_error> supervision::run() {
    if (auto prepared = prepare(); !prepared) {
        return prepared.error();
    }
    auto subject_end = input_.open(request_.input, request_.rows, request_.cols, identity_);
    if (!subject_end) {
        return supervision_error{contracts::helper_fault::spawn_failed, subject_end.error()};
    }
    // Under a terminal, stdout is read from its master (below), not from a pipe.
    const bool stdout_pipe = request_.capture_stdout && !input_.is_terminal();
    auto out_pipe = stdout_pipe ? posix::make_pipe() : posix::pipe_ends{};
    auto err_pipe = posix::make_pipe();
    if ((stdout_pipe && !out_pipe) || !err_pipe) {
        return supervision_error{contracts::helper_fault::spawn_failed,
                                 std::string("pipe: ") + std::strerror(errno)};
    }
    // A pipe of pipe-max-size (1 MiB by default) instead of 64 KiB: a subject that writes fast is woken and
    // we are woken a sixteenth as often. Where the kernel refuses (a lower limit), the default stays.
    for (const auto* ends : {&out_pipe, &err_pipe}) {
        if (ends->read) {
            (void)::fcntl(ends->read.get(), F_SETPIPE_SZ, capture_chunk_bytes * 4);
        }
    }
    // captureStdout:false sends stdout where the original's `>/dev/null` sent it.
    posix::unique_fd null_fd(stdout_pipe || input_.is_terminal() ? -1 : open_retry("/dev/null", O_WRONLY));
    const auto self = read_status(::getpid());
    spawn_plan plan;
    plan.argv = request_.argv;
    plan.environment = subject_environment();
    plan.cwd = request_.cwd;
    plan.scope_directory = scope_.directory.get();
    plan.scope_name = scope_.name;
    plan.stdout_fd = request_.capture_stdout ? out_pipe.write.get() : null_fd.get();
    plan.stderr_fd = err_pipe.write.get();
    plan.stdin_fd = subject_end->get();
    if (input_.is_terminal()) {
        // One terminal for all three, as `docker exec -t` gives it: what the subject writes there is read
        // from the master as its stdout (merged with stderr and the echo); the stderr pipe ends at once.
        plan.stdout_fd = plan.stderr_fd = subject_end->get();
        out_pipe.read = posix::unique_fd(::fcntl(input_.master(), F_DUPFD_CLOEXEC, 0));
    }
    plan.supervisor = ::getpid();
    plan.supervisor_start = self ? self->start_time : 0;
    plan.identity = identity_;
    // The supervisor must outlive a subject that exhausts the memory, to report it (oom_score.hpp).
    if (const auto oom = protect_from_oom(); oom.lowered) {
        plan.oom_score_adj = oom.inherited;
    }
    usage_.start();
    started_at_ = clock_type::now();
    // On the host's PID namespace its allocation counter counts the host's processes too: the subject's
    // are counted from the kernel's fork events where we may listen, else by a census of its tree.
    const bool listening = request_.shared_pid_namespace && forks_.open();
    spawned_ = spawn_subject(plan, io_.launcher);
    tree_ = subject_tree(spawned_.pid);
    usage_.count_by_census(request_.shared_pid_namespace && !listening);
    if (listening && spawned_.pid > 0) {
        forks_.follow(spawned_.pid);
    }
    if (spawned_.pid > 0) {
        usage_.saw(spawned_.pid);
    }
    // The subject has its own copy now (or never will): ours goes once `started` is out and the maskers are
    // made of the request's values (the wipe writes pages the fork shared: not on the way to `started`).
    auto wipe_request = [this, &plan] {
        for (auto& entry : plan.environment) {
            contracts::wipe(entry);
        }
        plan.environment = {};
        contracts::wipe_values(request_.environment);
        contracts::wipe_values(request_.credentials);
    };
    // The subject holds the write ends now: ours close, so that its exit is our EOF.
    out_pipe.write = posix::unique_fd();
    err_pipe.write = posix::unique_fd();
    null_fd = posix::unique_fd();
    *subject_end = posix::unique_fd();
    artifacts_.out.fd = out_pipe.read.release();
    artifacts_.err.fd = err_pipe.read.release();
    if (spawned_.status == spawn_status::fork_failed) {
        wipe_request();
        return supervision_error{contracts::helper_fault::spawn_failed,
                                 std::string("fork: ") + std::strerror(spawned_.error)};
    }
    if (spawned_.status == spawn_status::started && io_.emit) {
        const auto leader = read_status(spawned_.pid);
        io_.emit(contracts::started_message{spawned_.pid, spawned_.pid, leader ? leader->start_time : 0});
        if (request_.follow) {
            follow_.emplace(STDOUT_FILENO);
        }
    }
    build_maskers(); // before the first byte is read: the pipe holds what the subject writes meanwhile
    wipe_request();
    // What the request and the subject's environment took is free now: back to the system, so the
    // supervisor's resident set while it captures is its own working set and the maskers.
    (void)::malloc_trim(0);
    loop();
    if (follow_) {
        follow_->finish();
        if (follow_->dropped_total() > 0) {
            log_line("follow: " + std::to_string(follow_->dropped_total()) +
                     " bytes of output were not sent (the relay could not take them at once); the artifacts "
                     "have everything");
        }
    }
    auto m = report();
    if (spawned_.status == spawn_status::directory_refused) {
        // Not the subject's failure (it never ran, and no exit 126 says otherwise): the environment's.
        return supervision_error{contracts::helper_fault::spawn_failed,
                                 refused_directory_sentence(spawned_.blocked_directory, identity_)};
    }
    return m;
}

void supervision::loop() {
    if (io_.control != nullptr) {
        process_control(); // lines that arrived together with `run`
    }
    // Session mode: a heartbeat while we run, so that the relay notices a supervisor that was stopped.
    const bool beating = io_.control != nullptr && io_.emit;
    const auto beat = std::chrono::milliseconds(io_.heartbeat_ms);
    auto next_beat = clock_type::now() + beat;
    bool counting = usage_.by_census() && !leader_gone_; // a census while the leader runs (usage_meter.hpp)
    auto next_census = clock_type::now();
    while (phase_ != phase::done) {
        int timeout = -1;
        if (deadline_) {
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(*deadline_ - clock_type::now()).count();
            timeout = static_cast<int>(std::max<long long>(0, std::min<long long>(left, 60'000)));
        }
        if (beating) {
            const auto until_beat =
                std::chrono::duration_cast<std::chrono::milliseconds>(next_beat - clock_type::now()).count();
            const int wait = static_cast<int>(std::max<long long>(0, until_beat));
            timeout = timeout < 0 ? wait : std::min(timeout, wait);
        }
        if (phase_ == phase::killing) {
            timeout = timeout < 0 ? 20 : std::min(timeout, 20); // re-KILL what forked since the last round
        }
        if (counting) {
            timeout = timeout < 0 ? usage_meter::census_interval_ms
                                  : std::min(timeout, usage_meter::census_interval_ms);
        }
        pollfd fds[6] = {
            {io_.signal_fd, POLLIN, 0},
            {io_.control != nullptr && !io_.control->at_eof() ? io_.control->fd() : -1, POLLIN, 0},
            {artifacts_.out.fd, POLLIN, 0},
            {artifacts_.err.fd, POLLIN, 0},
            {forks_.fd(), POLLIN, 0},
            {input_.writable_fd(), POLLOUT, 0}};
        const int ready = ::poll(fds, 6, timeout);
        if (ready < 0 && errno != EINTR) {
            throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
        }
        if (fds[4].fd >= 0 && fds[4].revents != 0) {
            forks_.drain(); // before a SIGCHLD is handled: a fork is queued before its child can exit
        }
        if ((fds[0].revents & POLLIN) != 0) {
            on_signals();
        }
        if (fds[1].fd >= 0 && fds[1].revents != 0) {
            on_control();
        }
        if (fds[2].fd >= 0 && fds[2].revents != 0) {
            on_stream(artifacts_.out, true);
        }
        if (fds[3].fd >= 0 && fds[3].revents != 0) {
            on_stream(artifacts_.err, false);
        }
        if (fds[5].fd >= 0 && fds[5].revents != 0) {
            report_taken(input_.on_writable());
        }
        const auto now = clock_type::now();
        if (counting && now >= next_census) {
            census();
            next_census = now + std::chrono::milliseconds(usage_meter::census_interval_ms);
        }
        counting = usage_.by_census() && !leader_gone_;
        on_timer(now);
        if (beating && now >= next_beat) {
            io_.emit(contracts::heartbeat_message{});
            next_beat = now + beat;
        }
    }
}

void supervision::on_signals() {
    bool child = false;
    for (const int sig : drain_signals(io_.signal_fd)) {
        if (sig == SIGCHLD) {
            child = true;
        } else {
            settle("signal:" + signal_name(sig));
        }
    }
    if (child) {
        on_children();
    }
}

void supervision::on_control() {
    if (io_.control->fill() != line_reader::fill_result::data && !io_.control->at_eof()) {
        io_.control->wipe();
    }
    process_control();
}

bool supervision::take_input() {
    contracts::input_message chunk;
    input_owed_ -= io_.control->take(static_cast<std::size_t>(input_owed_), chunk.data);
    if (!chunk.data.empty()) {
        report_taken(input_.add(chunk));
    }
    return input_owed_ == 0;
}

void supervision::process_control() {
    while (input_owed_ == 0 || take_input()) {
        contracts::secret_text line; // wiped at the end of each turn
        const auto popped = io_.control->pop(line);
        if (popped == line_reader::pop_result::none) {
            break;
        }
        if (popped == line_reader::pop_result::oversize) {
            io_.emit(contracts::error_message{contracts::helper_fault::bad_request,
                                              "session line exceeds the size limit"});
            continue;
        }
        auto message = contracts::parse_session_message(line.view());
        line.clear();
        if (!message) {
            io_.emit(
                contracts::error_message{contracts::helper_fault::bad_request, message.error().message()});
        } else if (const auto* cancel = std::get_if<contracts::cancel_request>(&*message)) {
            settle(cancel->reason.empty() ? "cancel" : cancel->reason);
        } else if (const auto* input = std::get_if<contracts::input_message>(&*message)) {
            input_owed_ = input->size; // its bytes follow the line
            if (input->eof) {
                report_taken(input_.add(*input));
            }
        } else if (const auto* size = std::get_if<contracts::resize_message>(&*message)) {
            input_.resize(size->rows, size->cols);
        } else if (std::holds_alternative<contracts::run_request>(*message)) {
            io_.emit(contracts::error_message{contracts::helper_fault::busy,
                                              "a subject is already running in this session"});
        } else {
            io_.emit(contracts::error_message{contracts::helper_fault::bad_request,
                                              "unexpected message in a running session"});
        }
    }
    if (io_.control->at_eof()) {
        // The relay is gone (crashed, killed, or its connection dropped): nobody will collect the result,
        // so nothing may keep running on its behalf. After a normal exit this changes nothing.
        settle("relay-gone");
    }
}

void supervision::on_children() {
    while (true) {
        siginfo_t info{};
        // Peek without reaping: the leader must stay a zombie until we are done signalling its group.
        if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) {
            break;
        }
        if (info.si_pid != spawned_.pid) {
            reaped_other(info.si_pid);
            continue;
        }
        if (!leader_gone_) {
            leader_exited(info.si_status, info.si_code != CLD_EXITED);
        }
        // waitid keeps answering with the zombie leader; other dead children are found through /proc.
        tree_.reap_others([this](pid_t pid, const rusage& usage) { counted(pid, usage); });
        break;
    }
    if (settling_ && scope_quiet()) {
        settled_at_ = clock_type::now();
        start_draining(request_.drain_ms);
    }
}

void supervision::reaped_other(pid_t pid) {
    rusage usage{};
    if (::wait4(pid, nullptr, WNOHANG, &usage) == pid) {
        counted(pid, usage);
    }
}

void supervision::counted(pid_t pid, const rusage& usage) {
    // The launcher is ours (it held our resident pages at the fork), a subject's orphan is the subject's.
    if (pid != spawned_.launcher && pid != drainer_) {
        usage_.add(usage);
        usage_.saw(pid);
    }
}

void supervision::census() {
    // The subject's tree as it stands: our children (the leader, orphans we adopted) and theirs.
    std::vector<pid_t> frontier = children_of(::getpid());
    std::set<pid_t> visited;
    while (!frontier.empty()) {
        const pid_t pid = frontier.back();
        frontier.pop_back();
        if (pid == spawned_.launcher || pid == drainer_ || !visited.insert(pid).second) {
            continue;
        }
        usage_.saw(pid);
        const auto more = children_of(pid);
        frontier.insert(frontier.end(), more.begin(), more.end());
    }
}

void supervision::leader_exited(int status, bool killed) {
    leader_gone_ = true;
    exited_at_ = clock_type::now();
    exit_code_ = killed ? 128 + status : status;
    death_signal_ = killed ? status : 0;
    if (!settling_) {
        start_draining(request_.drain_ms);
    }
}

void supervision::start_draining(std::uint32_t ms) {
    phase_ = phase::draining;
    deadline_ = clock_type::now() + std::chrono::milliseconds(ms);
}

void supervision::on_stream(captured_stream& stream, bool is_stdout) {
    char* buffer = read_buffer_.get();
    const ssize_t got = posix::read_retry(stream.fd, buffer, capture_chunk_bytes);
    if (got < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
        return; // a terminal's master (non-blocking) woke us for nothing
    }
    std::string_view shown;
    bool kept = true;
    if (got <= 0) {
        // A pipe's EOF, or a terminal's EIO once no process holds its slave.
        stream.close_pipe();
        if (is_stdout) {
            input_.terminal_closed();
        }
        kept = stream.finish(shown);
    } else {
        const std::string_view chunk(buffer, static_cast<std::size_t>(got));
        // The frame is decoded from what the subject wrote to stdout, unmasked; stderr counts as noise. The
        // carrier is fed first: it follows the stream's digest, which `take` feeds.
        (is_stdout ? carrier_ : stderr_carrier_).feed(chunk);
        kept = stream.take(chunk, shown);
    }
    if (!kept) {
        // Keep reading so the subject never blocks on a full pipe; the report still counts every byte.
        log_line("cannot write " + stream.path + ": " + std::strerror(stream.write_error));
    }
    if (follow_ && !shown.empty()) {
        follow_->offer(is_stdout ? contracts::output_stream_name::stdout_stream
                                 : contracts::output_stream_name::stderr_stream,
                       shown);
    }
}

void supervision::report_taken(std::uint64_t bytes) {
    // Told in steps of input_report_bytes, not per write: each `input-taken` crosses the engine (shim,
    // daemon, relay), and one per 32 KiB halved a forwarded stdin's rate. The relay waits only once more
    // than its window less a chunk is untold, more than a step, so what it waits for is always told.
    input_untold_ += bytes;
    if (input_untold_ >= contracts::input_report_bytes && io_.emit) {
        io_.emit(contracts::input_taken_message{input_untold_});
        input_untold_ = 0;
    }
}

void supervision::on_timer(clock_type::time_point now) {
    if (phase_ == phase::draining && (streams_closed() || (deadline_ && now >= *deadline_))) {
        hand_off_streams();
        phase_ = phase::done;
        return;
    }
    if (phase_ == phase::terminating && deadline_ && now >= *deadline_) {
        phase_ = phase::killing;
        deadline_ = now + std::chrono::milliseconds(request_.kill_grace_ms);
        tree_.signal(SIGKILL);
        return;
    }
    if (phase_ == phase::killing) {
        if (scope_quiet()) {
            settled_at_ = now;
            start_draining(request_.drain_ms);
        } else if (deadline_ && now >= *deadline_) {
            quiesced_ = false;
            settled_at_ = now;
            log_line("processes of the subject are still alive after the KILL grace");
            hand_off_streams();
            phase_ = phase::done;
        } else {
            tree_.signal(SIGKILL);
        }
    }
}

void supervision::settle(const std::string& reason) {
    if (settling_ && reason == contracts::kill_now_reason && phase_ == phase::terminating) {
        deadline_ = clock_type::now(); // the rest of the TERM grace is given up: KILL now
        on_timer(*deadline_);
        return;
    }
    if (settling_ || leader_gone_ || phase_ == phase::done) {
        return; // already settling, or the subject already ended on its own: left alone
    }
    settling_ = true;
    reason_ = reason;
    settle_started_ = clock_type::now();
    phase_ = phase::terminating;
    deadline_ = settle_started_ + std::chrono::milliseconds(request_.term_grace_ms);
    tree_.signal(SIGTERM);
    if (request_.term_grace_ms == 0) {
        on_timer(clock_type::now());
    }
}

void supervision::hand_off_streams() {
    drainer_ = drain_in_background(artifacts_.out, artifacts_.err, {io_.signal_fd, lock_fd_.get()});
}

report_message supervision::report() {
    if (!leader_gone_) {
        // Only when settling gave up with the leader alive (D state); it cannot be reported as exited.
        exit_code_ = 128 + SIGKILL;
        death_signal_ = SIGKILL;
    }
    // What the subject leaves running stays for the verifier, and is recorded so that the next trial in
    // this environment starts without it.
    if (state_directory_ && !request_.keep_leftovers && spawned_.status == spawn_status::started) {
        record_leftovers(*state_directory_, tree_.left_running(drainer_));
    }
    // Reap the leader last: until now its zombie kept the pgid from being reused.
    if (spawned_.pid > 0) {
        reaped_other(spawned_.pid);
    }
    // Ours to remove also when the start failed after the child published it: a child that had taken on
    // the subject's user could not remove it from a root-only directory.
    if (spawned_.status != spawn_status::scope_unavailable && spawned_.status != spawn_status::fork_failed) {
        (void)::unlinkat(scope_.directory.get(), scope_.name.c_str(), 0);
    }
    if (spawned_.status == spawn_status::scope_unavailable) {
        // The carrier the original's wrapper produced in this case: exactly one line, exit 111.
        carrier_ = contracts::carrier();
        carrier_.feed(contracts::scope_error_line(request_.result_token));
        exit_code_ = contracts::scope_unavailable_exit_code;
        death_signal_ = 0;
    }
    carrier_.finish();
    stderr_carrier_.finish();
    // The scope error's carrier is the wrapper's one line: nothing the subject wrote is part of it.
    const auto* merged_stderr =
        spawned_.status == spawn_status::scope_unavailable ? nullptr : &stderr_carrier_;
    auto projection =
        contracts::project(carrier_, request_.result_token, request_.capture_stdout, merged_stderr);
    report_message m;
    m.settled = settling_;
    m.exit_code = exit_code_;
    m.signal = death_signal_ != 0 ? signal_name(death_signal_) : std::string();
    m.stdout_text = std::move(projection.stdout_text);
    m.diagnostic = std::move(projection.diagnostic);
    m.stdout_artifact = artifacts_.out.summary();
    m.stderr_artifact = artifacts_.err.summary();
    m.stderr_tail = artifacts_.err.tail_text();
    m.run_ms = ms_between(started_at_, leader_gone_ ? exited_at_ : clock_type::now());
    m.peak_rss_kib = contracts::peak_rss_kib();
    if (spawned_.status == spawn_status::started) {
        // After the leader was reaped: its time and its descendants' reaped time are ours to read now.
        // The same span: start → the leader's exit. Ours among the processes since: a launcher forked then
        // (not one started ahead), a drainer.
        m.usage = usage_.measure(m.run_ms, spawned_.own_forks + (drainer_ > 0 ? 1U : 0U));
        if (forks_.fd() >= 0) {
            forks_.drain();
            m.usage->processes = forks_.processes();
            if (!forks_.exact()) {
                log_line("usage: the kernel dropped process events on a busy host: the process count may be "
                         "short");
            }
        }
        artifacts_.write_usage(*m.usage);
    }
    // Into place, the receipt last: whoever sees it sees the files it vouches for.
    m.receipt = artifacts_.publish(drainer_ > 0);
    if (settling_) {
        m.settle_ms = ms_between(settle_started_, settled_at_);
        m.signalled = tree_.signalled();
        m.reason = reason_;
        m.quiesced = quiesced_;
    }
    return m;
}

} // namespace

void throw_exception_from_error(const supervision_error& e, const boost::source_location&) {
    throw std::runtime_error(std::string(contracts::to_string(e.code)) + ": " + e.message);
}

boost::system::result<contracts::report_message, supervision_error> supervise(contracts::run_request& request,
                                                                              const supervisor_io& io) {
    // Secrets live in this process from here on: no core dumps, no ptrace by same-uid processes, no
    // /proc/<pid>/environ or mem for others.
    ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
        return supervision_error{contracts::helper_fault::spawn_failed,
                                 std::string("cannot become a subreaper: ") + std::strerror(errno)};
    }
    if (request.scope_path.empty()) {
        request.scope_path =
            std::string(contracts::scope_directory) + "/.maka-eval-" + std::to_string(::getpid()) + ".pid";
    }
    supervision s(request, io);
    return s.run();
}

} // namespace maka_eval::in_container
