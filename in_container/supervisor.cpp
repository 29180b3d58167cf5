// The supervisor's poll loop and settle state machine (see supervisor.hpp).
#include "in_container/supervisor.hpp"

#include "contracts/limits.hpp"
#include "contracts/proc_status.hpp"
#include "contracts/receipt.hpp"
#include "contracts/result_frame.hpp"
#include "contracts/secret.hpp"
#include "contracts/secret_mask.hpp"
#include "contracts/utf8.hpp"
#include "contracts/wire_json.hpp"
#include "in_container/artifact_store.hpp"
#include "in_container/follow_output.hpp"
#include "in_container/identity.hpp"
#include "in_container/io.hpp"
#include "in_container/oom_score.hpp"
#include "in_container/process_table.hpp"
#include "in_container/root_state.hpp"
#include "in_container/signals.hpp"
#include "in_container/spawn.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <poll.h>
#include <set>
#include <stdexcept>
#include <sys/prctl.h>
#include <sys/resource.h>
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

struct output_stream {
    int fd = -1;       // our read end; -1 once closed
    int artifact = -1; // the artifact file
    std::string path;
    contracts::sha256 digest;      // of everything the subject wrote (the report's)
    contracts::sha256 file_digest; // of what went to disk, masked (the receipt's)
    std::uint64_t bytes = 0;       // everything the subject wrote
    std::uint64_t written = 0;     // what went to disk: at most the artifact limit
    std::uint64_t limit = contracts::default_artifact_limit_bytes;
    bool artifact_failed = false;
    int write_error = 0;                            // errno of the write the disk refused
    bool cut = false;                               // a byte was dropped at the limit (said once in the log)
    std::optional<contracts::secret_masker> masker; // nullopt: nothing to mask
    std::string masked;                             // the masker's output for the current chunk
    std::string tail;                               // the last bytes kept (up to twice stderr_tail_bytes)

    // The subject's bytes, masked, kept; `shown` is what was kept (for the live output). False only when
    // the file cannot be written.
    bool pass(std::string_view chunk, std::string_view& shown) {
        if (!masker) {
            shown = chunk;
            return keep(chunk);
        }
        masked.clear();
        masker->feed(chunk, masked);
        shown = masked;
        return keep(masked);
    }
    // The stream ended: what the masker held back.
    bool finish(std::string_view& shown) {
        shown = {};
        if (!masker) {
            return true;
        }
        masked.clear();
        masker->finish(masked);
        shown = masked;
        return keep(masked);
    }
    // Keeps what fits under the limit; false only when the file cannot be written.
    bool keep(std::string_view chunk) {
        if (artifact_failed) {
            return true;
        }
        const auto room = static_cast<std::size_t>(std::min<std::uint64_t>(limit - written, chunk.size()));
        if (room > 0 && !write_all(artifact, chunk.substr(0, room))) {
            artifact_failed = true;
            write_error = errno;
            // Part of it may be on disk (a full disk takes what fits): the receipt describes the file as it
            // is.
            struct stat info {};
            if (::fstat(artifact, &info) == 0 && static_cast<std::uint64_t>(info.st_size) > written &&
                static_cast<std::uint64_t>(info.st_size) - written <= room) {
                const auto partial =
                    static_cast<std::size_t>(static_cast<std::uint64_t>(info.st_size) - written);
                file_digest.update(chunk.substr(0, partial));
                written += partial;
            }
            return false;
        }
        file_digest.update(chunk.substr(0, room));
        written += room;
        // The end of what was kept, for the report (bounded: trimmed when it has grown to twice the tail).
        tail.append(
            chunk.substr(room > contracts::stderr_tail_bytes ? room - contracts::stderr_tail_bytes : 0,
                         std::min(room, contracts::stderr_tail_bytes)));
        if (tail.size() > 2 * contracts::stderr_tail_bytes) {
            tail.erase(0, tail.size() - contracts::stderr_tail_bytes);
        }
        if (room < chunk.size() && !cut) {
            cut = true;
            log_line(path + " reached its limit of " + std::to_string(limit) +
                     " bytes: the rest is counted and hashed, not kept");
        }
        return true;
    }
    [[nodiscard]] contracts::artifact_summary summary() {
        contracts::artifact_summary out{path, bytes, digest.hex()};
        out.written = written;
        out.truncated = cut; // some byte was dropped at the limit
        out.masked = masker ? masker->masked() : 0;
        return out;
    }
};

// The first component of `path` that is a symbolic link, as a path; nullopt when none is.
std::optional<std::string> first_link_on(const std::string& path) {
    for (auto end = path.find('/', 1);; end = path.find('/', end + 1)) {
        const std::string prefix = path.substr(0, end);
        struct stat info {};
        if (::lstat(prefix.c_str(), &info) == 0 && S_ISLNK(info.st_mode)) {
            return prefix;
        }
        if (end == std::string::npos) {
            return std::nullopt;
        }
    }
}

class supervision {
  public:
    supervision(run_request& request, const supervisor_io& io) : request_(request), io_(io) {}
    ~supervision() {
        for (auto* s : {&out_, &err_}) {
            close_fd(s->fd);
            close_fd(s->artifact);
        }
        close_fd(usage_fd_);
        close_fd(receipt_fd_);
        close_fd(lock_fd_);
        close_fd(scope_directory_);
    }
    supervision(const supervision&) = delete;
    supervision& operator=(const supervision&) = delete;

    boost::system::result<report_message, supervision_error> run();

  private:
    enum class phase { running, draining, terminating, killing, done };

    static void close_fd(int& fd) {
        if (fd >= 0) {
            ::close(fd);
            fd = -1;
        }
    }

    boost::system::result<void, supervision_error> prepare();
    std::vector<std::string> subject_environment() const;
    void loop();
    void on_signals();
    void on_control();
    void process_control(); // the lines already buffered
    void on_children();
    void on_stream(output_stream& stream, bool is_stdout);
    void on_timer(clock_type::time_point now);
    void settle(const std::string& reason);
    void signal_scope(int sig);
    [[nodiscard]] bool scope_quiet() const;
    void leader_exited(int code, bool killed);
    void start_draining(std::uint32_t ms);
    void hand_off_streams();
    [[nodiscard]] bool streams_closed() const { return out_.fd < 0 && err_.fd < 0; }
    report_message report();

    run_request& request_;
    const supervisor_io& io_;
    output_stream out_;
    output_stream err_;
    contracts::carrier carrier_;
    spawn_outcome spawned_;
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
    std::set<pid_t> signalled_;
    std::optional<policy::subject_identity> identity_;
    std::optional<std::string> state_directory_; // root-only, when we are root
    pid_t drainer_ = -1;
    std::optional<follow_output> follow_; // session mode with `follow`: output to the relay as it comes
    int usage_fd_ = -1;                   // maka-subject.usage.json, written once the subject is done
    contracts::sha256 usage_digest_;
    std::uint64_t usage_bytes_ = 0;
    int receipt_fd_ = -1; // maka-subject.receipt.json, written last
    std::optional<artifact_store> store_;
    int lock_fd_ = -1;         // one trial at a time (lock_trial), held while we supervise
    int scope_directory_ = -1; // the scope record's directory, opened without following links
    std::string scope_name_;
    void build_maskers();
    void write_receipt();
    rusage children_before_{}; // what the helper's own earlier children used (e.g. the probe)
    std::optional<std::uint64_t> last_pid_before_;
    [[nodiscard]] contracts::subject_usage usage(std::uint64_t wall_ms) const;
};

// A number from a /proc/sys file; nullopt where /proc does not say.
std::optional<std::uint64_t> proc_sys_number(const char* path) {
    const auto text = read_file(path, 64);
    std::uint64_t value = 0;
    if (!text || std::from_chars(text->data(), text->data() + text->size(), value).ec != std::errc()) {
        return std::nullopt;
    }
    return value;
}

// The last process id allocated in our PID namespace.
std::optional<std::uint64_t> last_pid_allocated() {
    return proc_sys_number("/proc/sys/kernel/ns_last_pid");
}

std::uint64_t ms_of(const timeval& t) {
    return static_cast<std::uint64_t>(t.tv_sec) * 1000U + static_cast<std::uint64_t>(t.tv_usec) / 1000U;
}

contracts::subject_usage supervision::usage(std::uint64_t wall_ms) const {
    contracts::subject_usage out;
    out.wall_ms = wall_ms;
    rusage now{};
    if (::getrusage(RUSAGE_CHILDREN, &now) == 0) {
        out.user_ms = ms_of(now.ru_utime) - std::min(ms_of(now.ru_utime), ms_of(children_before_.ru_utime));
        out.system_ms = ms_of(now.ru_stime) - std::min(ms_of(now.ru_stime), ms_of(children_before_.ru_stime));
        out.peak_rss_kib = static_cast<std::uint64_t>(std::max(0L, now.ru_maxrss));
    }
    if (const auto last = last_pid_allocated(); last && last_pid_before_) {
        // Allocation wraps at pid_max; our own fork of a drainer is not the subject's.
        const std::uint64_t wrap = proc_sys_number("/proc/sys/kernel/pid_max").value_or(4194304);
        std::uint64_t allocated =
            *last >= *last_pid_before_ ? *last - *last_pid_before_ : *last + wrap - *last_pid_before_;
        if (drainer_ > 0 && allocated > 0) {
            --allocated;
        }
        out.processes = allocated;
    }
    return out;
}

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
    // The scope record's directory (/logs/agent) made as /logs/artifacts is, when the image has no /logs:
    // otherwise the subject could never start there. Opened once, never through a link (a /logs/agent an
    // earlier subject pointed elsewhere is refused, naming it); the record is made and removed relative to
    // it. Where it cannot be made for another reason (a read-only /logs), the original's answer stands
    // (exit 111, execution-scope-unavailable).
    {
        const auto slash = request_.scope_path.rfind('/');
        const std::string directory = slash == std::string::npos ? "."
                                      : slash == 0               ? "/"
                                                                 : request_.scope_path.substr(0, slash);
        scope_name_ =
            slash == std::string::npos ? request_.scope_path : request_.scope_path.substr(slash + 1);
        scope_directory_ = open_directory_creating(directory, 0755);
        if (const auto link = scope_directory_ < 0 ? first_link_on(directory) : std::nullopt) {
            return supervision_error{contracts::helper_fault::spawn_failed,
                                     "the scope record's directory " + directory + " is reached through " +
                                         "a symbolic link (" + *link + "): nothing is written there"};
        }
    }
    const std::string artifacts =
        request_.artifacts_dir.empty() ? std::string(contracts::artifacts_directory) : request_.artifacts_dir;
    if (const auto state = state_directory_ ? state_directory_ : root_state_directory()) {
        lock_fd_ = lock_trial(*state, artifacts);
        if (lock_fd_ < 0 && errno == EWOULDBLOCK) {
            return supervision_error{contracts::helper_fault::spawn_failed,
                                     "another trial is already running in this environment (with " +
                                         artifacts +
                                         "): one at a time, or the artifacts of both would be lost"};
        }
    }
    // What an earlier trial's subject left running is stopped before anything of this trial exists.
    if (state_directory_ && !request_.keep_leftovers) {
        (void)stop_leftovers(*state_directory_);
    }
    const std::string dir =
        request_.artifacts_dir.empty() ? std::string(contracts::artifacts_directory) : request_.artifacts_dir;
    out_.path = dir + "/" + std::string(contracts::stdout_artifact_name);
    err_.path = dir + "/" + std::string(contracts::stderr_artifact_name);
    out_.limit = err_.limit = request_.artifact_limit;
    const auto unavailable = [](const std::string& why) {
        return supervision_error{contracts::helper_fault::artifacts_unavailable,
                                 "Maka Eval could not prepare subject artifact output: " + why};
    };
    auto store = artifact_store::open(dir, identity_ ? identity_->gid : ::getgid());
    if (!store) {
        return unavailable(store.error());
    }
    store_.emplace(std::move(*store));
    for (const auto& [fd, name] : {std::pair{&out_.artifact, contracts::stdout_artifact_name},
                                   std::pair{&err_.artifact, contracts::stderr_artifact_name},
                                   std::pair{&usage_fd_, contracts::usage_artifact_name},
                                   std::pair{&receipt_fd_, contracts::receipt_artifact_name}}) {
        const bool small = fd == &usage_fd_ || fd == &receipt_fd_;
        if ((*fd = store_->create(name, small ? 4096 : 0)) < 0) {
            return unavailable(dir + "/" + std::string(name) + ": " + std::strerror(errno));
        }
    }
    build_maskers();
    return {};
}

// Every credential's value, and the values of the environment entries `mask` names, masked out of both
// artifacts and the live output (secret_mask.hpp). Built while the values are still here: they are wiped
// once the subject has its copy.
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
        out_.masker = masker;
        err_.masker = masker;
    }
}

std::vector<std::string> supervision::subject_environment() const {
    // The helper's own environment, then `execute`'s environment, credentials and result token (later wins).
    std::vector<std::string> env;
    auto set = [&env](std::string_view name, std::string_view value) {
        const std::string prefix = std::string(name) + "=";
        std::erase_if(env, [&](const std::string& entry) { return entry.starts_with(prefix); });
        env.push_back(prefix + std::string(value));
    };
    for (char** entry = environ; *entry != nullptr; ++entry) {
        env.emplace_back(*entry);
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

boost::system::result<report_message, supervision_error> supervision::run() {
    if (auto prepared = prepare(); !prepared) {
        return prepared.error();
    }
    int out_pipe[2] = {-1, -1};
    int err_pipe[2] = {-1, -1};
    if ((request_.capture_stdout && ::pipe2(out_pipe, O_CLOEXEC) != 0) || ::pipe2(err_pipe, O_CLOEXEC) != 0) {
        return supervision_error{contracts::helper_fault::spawn_failed,
                                 std::string("pipe: ") + std::strerror(errno)};
    }
    // captureStdout:false sends stdout where the original's `>/dev/null` sent it.
    const int null_fd = request_.capture_stdout ? -1 : ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    const auto self = read_status(::getpid());
    spawn_plan plan;
    plan.argv = request_.argv;
    plan.environment = subject_environment();
    plan.cwd = request_.cwd;
    plan.scope_directory = scope_directory_;
    plan.scope_name = scope_name_;
    plan.stdout_fd = request_.capture_stdout ? out_pipe[1] : null_fd;
    plan.stderr_fd = err_pipe[1];
    plan.supervisor = ::getpid();
    plan.supervisor_start = self ? self->start_time : 0;
    plan.identity = identity_;
    // The supervisor must outlive a subject that exhausts the memory, to report it (oom_score.hpp).
    if (const auto oom = protect_from_oom(); oom.lowered) {
        plan.oom_score_adj = oom.inherited;
    }
    (void)::getrusage(RUSAGE_CHILDREN, &children_before_);
    last_pid_before_ = last_pid_allocated();
    started_at_ = clock_type::now();
    spawned_ = spawn_subject(plan);
    // The subject has its own copy now (or never will): ours goes.
    for (auto& entry : plan.environment) {
        contracts::wipe(entry);
    }
    contracts::wipe_values(request_.environment);
    contracts::wipe_values(request_.credentials);
    close_fd(out_pipe[1]);
    close_fd(err_pipe[1]);
    if (null_fd >= 0) {
        ::close(null_fd);
    }
    out_.fd = out_pipe[0];
    err_.fd = err_pipe[0];
    if (spawned_.status == spawn_status::fork_failed) {
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
    loop();
    if (follow_) {
        follow_->finish();
        if (follow_->dropped_total() > 0) {
            log_line("follow: " + std::to_string(follow_->dropped_total()) +
                     " bytes of output were not sent (the relay could not take them at once); the artifacts "
                     "have everything");
        }
    }
    return report();
}

void supervision::loop() {
    if (io_.control != nullptr) {
        process_control(); // lines that arrived together with `run`
    }
    // Session mode: a heartbeat while we run, so that the relay notices a supervisor that was stopped.
    const bool beating = io_.control != nullptr && io_.emit;
    const auto beat = std::chrono::milliseconds(contracts::session_heartbeat_ms);
    auto next_beat = clock_type::now() + beat;
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
        pollfd fds[4] = {
            {io_.signal_fd, POLLIN, 0},
            {io_.control != nullptr && !io_.control->at_eof() ? io_.control->fd() : -1, POLLIN, 0},
            {out_.fd, POLLIN, 0},
            {err_.fd, POLLIN, 0}};
        const int ready = ::poll(fds, 4, timeout);
        if (ready < 0 && errno != EINTR) {
            throw std::runtime_error(std::string("poll: ") + std::strerror(errno));
        }
        if ((fds[0].revents & POLLIN) != 0) {
            on_signals();
        }
        if (fds[1].fd >= 0 && fds[1].revents != 0) {
            on_control();
        }
        if (fds[2].fd >= 0 && fds[2].revents != 0) {
            on_stream(out_, true);
        }
        if (fds[3].fd >= 0 && fds[3].revents != 0) {
            on_stream(err_, false);
        }
        const auto now = clock_type::now();
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

void supervision::process_control() {
    std::string line;
    while (true) {
        const auto popped = io_.control->pop(line);
        if (popped == line_reader::pop_result::none) {
            break;
        }
        if (popped == line_reader::pop_result::oversize) {
            io_.emit(contracts::error_message{contracts::helper_fault::bad_request,
                                              "session line exceeds the size limit"});
            continue;
        }
        auto message = contracts::parse_session_message(line);
        contracts::wipe(line);
        if (!message) {
            io_.emit(
                contracts::error_message{contracts::helper_fault::bad_request, message.error().message()});
        } else if (const auto* cancel = std::get_if<contracts::cancel_request>(&*message)) {
            settle(cancel->reason.empty() ? "cancel" : cancel->reason);
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
            ::waitpid(info.si_pid, nullptr, WNOHANG);
            continue;
        }
        if (!leader_gone_) {
            leader_exited(info.si_status, info.si_code != CLD_EXITED);
        }
        // waitid keeps answering with the zombie leader; other dead children are found through /proc.
        for (const auto& process : descendants_of(::getpid())) {
            if (process.ppid == ::getpid() && process.pid != spawned_.pid && process.state == 'Z') {
                ::waitpid(process.pid, nullptr, WNOHANG);
            }
        }
        break;
    }
    if (settling_ && scope_quiet()) {
        settled_at_ = clock_type::now();
        start_draining(request_.drain_ms);
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

void supervision::on_stream(output_stream& stream, bool is_stdout) {
    char buffer[65536];
    ssize_t got = 0;
    do {
        got = ::read(stream.fd, buffer, sizeof buffer);
    } while (got < 0 && errno == EINTR);
    std::string_view shown;
    bool kept = true;
    if (got <= 0) {
        close_fd(stream.fd);
        kept = stream.finish(shown);
    } else {
        const std::string_view chunk(buffer, static_cast<std::size_t>(got));
        stream.bytes += chunk.size();
        stream.digest.update(chunk);
        if (is_stdout) {
            carrier_.feed(chunk); // the frame is decoded from what the subject wrote, unmasked
        }
        kept = stream.pass(chunk, shown);
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

void supervision::on_timer(clock_type::time_point now) {
    if (phase_ == phase::draining && (streams_closed() || (deadline_ && now >= *deadline_))) {
        hand_off_streams();
        phase_ = phase::done;
        return;
    }
    if (phase_ == phase::terminating && deadline_ && now >= *deadline_) {
        phase_ = phase::killing;
        deadline_ = now + std::chrono::milliseconds(request_.kill_grace_ms);
        signal_scope(SIGKILL);
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
            signal_scope(SIGKILL);
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
    signal_scope(SIGTERM);
    if (request_.term_grace_ms == 0) {
        on_timer(clock_type::now());
    }
}

void supervision::signal_scope(int sig) {
    // Snapshot first: what the subject starts in response to this signal (a TERM trap writing its last
    // frame) is not hit by the same round. Then the group (the leader, alive or a zombie, keeps the pgid
    // ours), then every descendant seen: setsid'd daemons left the group but not our subtree.
    const auto descendants = descendants_of(::getpid());
    const bool group_signalled = ::kill(-spawned_.pid, sig) == 0;
    if (group_signalled) {
        signalled_.insert(spawned_.pid);
    }
    for (const auto& process : descendants) {
        if (!is_live(process)) {
            continue;
        }
        if (process.pgid == spawned_.pid ? group_signalled : signal_exact(process, sig)) {
            signalled_.insert(process.pid);
        }
    }
}

bool supervision::scope_quiet() const {
    if (!leader_gone_) {
        return false;
    }
    for (const auto& process : descendants_of(::getpid())) {
        if (is_live(process)) {
            return false;
        }
    }
    return true;
}

void supervision::hand_off_streams() {
    // Background processes may still hold the pipes. Closing them would kill those writers with SIGPIPE,
    // which is not "left alone"; a detached drainer keeps appending to the artifacts until they close.
    if (streams_closed()) {
        return;
    }
    const pid_t pid = ::fork();
    drainer_ = pid;
    if (pid == 0) {
        // The drainer must not hold the relay's pipes (our stdin, stdout, stderr) or the session never ends.
        const int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
        for (int fd = 0; fd <= 2; ++fd) {
            ::dup2(null_fd, fd);
        }
        ::close(io_.signal_fd);
        close_fd(lock_fd_); // the next trial may start while this one's leftovers still write
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        char buffer[65536];
        while (out_.fd >= 0 || err_.fd >= 0) {
            pollfd fds[2] = {{out_.fd, POLLIN, 0}, {err_.fd, POLLIN, 0}};
            if (::poll(fds, 2, -1) < 0 && errno != EINTR) {
                break;
            }
            for (int i = 0; i < 2; ++i) {
                output_stream& s = i == 0 ? out_ : err_;
                if (s.fd >= 0 && fds[i].revents != 0) {
                    const ssize_t got = ::read(s.fd, buffer, sizeof buffer);
                    std::string_view shown;
                    if (got > 0) {
                        (void)s.pass({buffer, static_cast<std::size_t>(got)}, shown);
                    } else if (got == 0 || errno != EINTR) {
                        close_fd(s.fd);
                        (void)s.finish(shown);
                    }
                }
            }
        }
        ::_exit(0);
    }
    close_fd(out_.fd);
    close_fd(err_.fd);
}

// The receipt, after every artifact is synced: what a verifier checks the files against (receipt.hpp).
// Synced itself before the report goes out, so that `executed` never precedes what it vouches for.
void supervision::write_receipt() {
    if (!store_) {
        return;
    }
    std::vector<contracts::artifact_receipt> entries;
    for (auto* stream : {&out_, &err_}) {
        if (stream->artifact >= 0 && !stream->artifact_failed && ::fdatasync(stream->artifact) != 0) {
            stream->artifact_failed = true;
            stream->write_error = errno;
        }
        contracts::artifact_receipt entry;
        entry.name =
            std::string(stream == &out_ ? contracts::stdout_artifact_name : contracts::stderr_artifact_name);
        entry.bytes = stream->written;
        entry.sha256 = stream->file_digest.hex();
        entry.masked = stream->masker ? stream->masker->masked() : 0;
        entry.complete = !stream->cut && !stream->artifact_failed && drainer_ <= 0;
        entry.incomplete =
            stream->artifact_failed
                ? std::string("the disk refused a write: ") + std::strerror(stream->write_error)
            : stream->cut  ? "cut at the artifact limit of " + std::to_string(stream->limit) + " bytes"
            : drainer_ > 0 ? std::string("still written by a process the subject left running")
                           : std::string();
        entries.push_back(std::move(entry));
    }
    contracts::artifact_receipt usage_entry{
        std::string(contracts::usage_artifact_name), usage_bytes_, usage_digest_.hex(), true, {}, 0};
    if (usage_fd_ >= 0 && ::fdatasync(usage_fd_) != 0) {
        usage_entry.complete = false;
        usage_entry.incomplete = std::string("the disk refused a write: ") + std::strerror(errno);
    }
    entries.push_back(std::move(usage_entry));
    const std::string text = contracts::to_wire(contracts::to_json(entries)) + "\n";
    if (!write_all(receipt_fd_, text) || ::fdatasync(receipt_fd_) != 0) {
        log_line("cannot write " + std::string(contracts::receipt_artifact_name) + ": " +
                 std::strerror(errno));
    }
    close_fd(receipt_fd_);
    // Into place, the receipt last: whoever sees it sees the files it vouches for.
    for (const auto name : {contracts::stdout_artifact_name, contracts::stderr_artifact_name,
                            contracts::usage_artifact_name, contracts::receipt_artifact_name}) {
        if (!store_->publish(name)) {
            log_line("cannot publish " + std::string(name) + " into " +
                     out_.path.substr(0, out_.path.rfind('/')) + ": " + std::strerror(errno));
        }
    }
    store_->finish();
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
        auto left = descendants_of(::getpid());
        std::erase_if(left,
                      [this](const process_status& p) { return p.pid == drainer_ || p.pid == spawned_.pid; });
        record_leftovers(*state_directory_, left);
    }
    // Reap the leader last: until now its zombie kept the pgid from being reused.
    ::waitpid(spawned_.pid, nullptr, WNOHANG);
    if (spawned_.status == spawn_status::started) {
        (void)::unlinkat(scope_directory_, scope_name_.c_str(), 0);
    }
    if (spawned_.status == spawn_status::scope_unavailable) {
        // The carrier the original's wrapper produced in this case: exactly one line, exit 111.
        carrier_ = contracts::carrier();
        carrier_.feed(contracts::scope_error_line(request_.result_token));
        exit_code_ = contracts::scope_unavailable_exit_code;
        death_signal_ = 0;
    }
    carrier_.finish();
    auto projection = contracts::project(carrier_, request_.result_token, request_.capture_stdout);
    report_message m;
    m.settled = settling_;
    m.exit_code = exit_code_;
    m.signal = death_signal_ != 0 ? signal_name(death_signal_) : std::string();
    m.stdout_text = std::move(projection.stdout_text);
    m.diagnostic = std::move(projection.diagnostic);
    m.stdout_artifact = out_.summary();
    m.stderr_artifact = err_.summary();
    const std::string_view tail = err_.tail;
    m.stderr_tail = contracts::repair_utf8(tail.substr(
        tail.size() > contracts::stderr_tail_bytes ? tail.size() - contracts::stderr_tail_bytes : 0));
    m.run_ms = ms_between(started_at_, leader_gone_ ? exited_at_ : clock_type::now());
    m.peak_rss_kib = contracts::peak_rss_kib();
    if (spawned_.status == spawn_status::started) {
        // After the leader was reaped: its time and its descendants' reaped time are ours to read now.
        m.usage = usage(m.run_ms); // the same span: start → the leader's exit
        const std::string usage_line = contracts::to_wire(contracts::to_json(*m.usage)) + "\n";
        if (write_all(usage_fd_, usage_line)) {
            usage_digest_.update(usage_line);
            usage_bytes_ = usage_line.size();
        } else {
            log_line("cannot write " + std::string(contracts::usage_artifact_name) + ": " +
                     std::strerror(errno));
        }
    }
    write_receipt();
    close_fd(usage_fd_);
    if (settling_) {
        m.settle_ms = ms_between(settle_started_, settled_at_);
        m.signalled = signalled_.size();
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
