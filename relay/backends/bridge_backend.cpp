// The bridge backend (see bridge_backend.hpp).
#include "relay/backends/bridge_backend.hpp"

#include "contracts/limits.hpp"
#include "contracts/python_text.hpp"
#include "contracts/session_messages.hpp"
#include "policy/egress_gate.hpp"
#include "posix/io.hpp"
#include "relay/backends/bridge_channel.hpp"
#include "relay/backends/helper_binary.hpp"
#include "relay/backends/helper_start.hpp"
#include "relay/support/event_queue.hpp"
#include "relay/support/random_hex.hpp"
#include "relay/support/relay_clock.hpp"
#include "relay/trial/log.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace maka_eval::relay {
namespace {

using asio::as_tuple;
using asio::use_awaitable;
using std::chrono::milliseconds;
using std::chrono::seconds;

// Deadlines for the runner's calls: generous, since a cloud environment's exec can take seconds.
constexpr milliseconds call_deadline = seconds(120);
constexpr milliseconds install_deadline = seconds(300);
// The subject's run has no deadline of its own (the trial runner's agent timeout cancels the relay); a
// year stands for "none" without overflowing the timer.
constexpr milliseconds run_deadline = std::chrono::hours(24 * 365);
constexpr milliseconds cancel_retry = milliseconds(100);

// POSIX shell quoting: the runner's exec takes one command line.
std::string sh_quote(std::string_view word) {
    std::string out = "'";
    for (const char c : word) {
        if (c == '\'') {
            out += "'\\''";
        } else {
            out.push_back(c);
        }
    }
    return out + "'";
}

std::string sh_join(const std::vector<std::string>& words) {
    std::string out;
    for (const auto& word : words) {
        out += (out.empty() ? "" : " ") + sh_quote(word);
    }
    return out;
}

// The helper's messages in an exec's output. Runners may merge stderr into stdout (Harbor does), so log
// lines and engine noise are skipped rather than taken for a protocol failure.
std::vector<std::string> session_lines(const std::string& out) {
    std::vector<std::string> lines;
    for (auto line : contracts::python::splitlines(out)) {
        while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) {
            line.remove_suffix(1);
        }
        if (line.starts_with("{") && contracts::parse_session_message(line)) {
            lines.emplace_back(line);
        }
    }
    return lines;
}

std::string tail_of(const std::string& out) {
    constexpr std::size_t keep = 400;
    std::string text = out.size() > keep ? "…" + out.substr(out.size() - keep) : out;
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) {
        text.pop_back();
    }
    return text;
}

asio::awaitable<void> pause(milliseconds how_long) {
    relay_timer timer(co_await asio::this_coro::executor, how_long);
    co_await timer.async_wait(as_tuple(use_awaitable));
}

// The run request on this host, for the upload: a file only we can read, in a directory only we can enter,
// removed as soon as the upload is done.
class staged_request {
  public:
    staged_request() = default;
    staged_request(const staged_request&) = delete;
    staged_request& operator=(const staged_request&) = delete;
    ~staged_request() { remove(); }

    boost::system::result<std::string, relay_error> write(std::string& line) {
        const char* base = std::getenv("TMPDIR");
        std::string pattern =
            std::string(base != nullptr && *base != '\0' ? base : "/tmp") + "/maka-eval-XXXXXX";
        if (::mkdtemp(pattern.data()) == nullptr) {
            return relay_error{relay_errc::environment,
                               "cannot create a private directory for the run request: " +
                                   std::string(std::strerror(errno))};
        }
        dir_ = pattern;
        file_ = dir_ + "/run.json";
        const posix::unique_fd fd(posix::open_retry(file_, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600));
        const bool written = fd && posix::write_all(fd.get(), line);
        if (!written) {
            return relay_error{relay_errc::environment,
                               "cannot write the run request: " + std::string(std::strerror(errno))};
        }
        return boost::system::result<std::string, relay_error>(boost::system::in_place_value, file_);
    }

    void remove() {
        if (!file_.empty()) {
            ::unlink(file_.c_str());
            file_.clear();
        }
        if (!dir_.empty()) {
            ::rmdir(dir_.c_str());
            dir_.clear();
        }
    }

  private:
    std::string dir_;
    std::string file_;
};

// One emulated helper session: its state, and the coroutines that upload, run and cancel for it.
//
// Those coroutines wait on the runner for as long as the subject runs, and the trial may end first (the
// environment destroyed, the `stop` answered before the run exec). So the state is shared: each coroutine
// holds it until it returns, and the trial's handle (bridge_session) only marks it abandoned. The bridge
// channel they call outlives them all: it belongs to the backend, which outlives the io_context's run.
class bridge_run : public std::enable_shared_from_this<bridge_run> {
  public:
    // `hello` is the probe's, run as the runner's default user: the subject's identity. With `root_steps`
    // (the runner's exec takes user=) and a non-root default user, the run and cancel execs run as root
    // and the helper drops the subject to that identity. A request a root helper reads goes into the root
    // directory (`root_dir_requests`: we installed the helper there, so it is writable), else into /tmp.
    // `helper_on_host`: the helper we installed (empty: one the user mounted), put in again when a root
    // subject deleted it before a cancel.
    bridge_run(bridge_channel& bridge, std::string helper, std::string helper_on_host,
               contracts::hello_message hello, std::string hello_line, bool root_steps,
               bool root_dir_requests, std::string cwd, asio::any_io_executor executor)
        : bridge_(bridge), helper_(std::move(helper)), helper_on_host_(std::move(helper_on_host)),
          cwd_(std::move(cwd)), uid_(hello.uid), gid_(hello.gid),
          root_supervisor_(root_steps && hello.uid != 0),
          // The helper unlinks the request once read: only a root helper can in the root directory.
          request_dir_(root_dir_requests && (hello.uid == 0 || root_supervisor_) ? "" : "/tmp"),
          executor_(std::move(executor)), lines_(executor_, 16) {
        if (root_supervisor_) {
            hello.supervisor_uid = 0;
            deliver(contracts::session_message(std::move(hello)));
        } else {
            deliver(std::move(hello_line));
        }
    }

    asio::awaitable<bool> send(std::string line) {
        if (killed_) {
            co_return false;
        }
        auto message = contracts::parse_session_message(line);
        if (!message) {
            co_return false;
        }
        if (auto* run = std::get_if<contracts::run_request>(&*message)) {
            if (root_supervisor_) {
                // The helper, run as root, takes the subject's identity from the request.
                run->user = std::to_string(uid_) + ":" + std::to_string(gid_);
                line = contracts::serialize(*run);
            }
            if (state_ != state::idle) {
                co_return false;
            }
            state_ = state::staging;
            scope_ = run->scope_path;
            grace_ms_ = std::uint64_t{run->term_grace_ms} + run->kill_grace_ms + 5000;
            spawn(start(std::move(line)), "the run");
        } else if (std::holds_alternative<contracts::cancel_request>(*message)) {
            begin_cancel();
        }
        co_return true;
    }

    asio::awaitable<std::optional<std::string>> receive() {
        auto next = co_await lines_.next(std::nullopt);
        if (!next || !*next) {
            lines_.close(); // the end was the last line: every later receive() ends at once too
            co_return std::nullopt;
        }
        co_return std::move(*next);
    }

    // No stdin to close: the equivalent of the dead-man switch is to have a running subject settled (its
    // run then ends the session); with no subject, the session simply ends.
    void close_input() {
        if (state_ == state::staging || state_ == state::running) {
            begin_cancel();
        } else {
            finish();
        }
    }

    void kill() {
        killed_ = true;
        finish();
    }

  private:
    // Every coroutine of the session is owned by it, and one that fails (an exception: no random bytes, no
    // memory) ends the session with an error the trial logs and acts on, instead of leaving it waiting.
    void spawn(asio::awaitable<void> work, std::string what) {
        asio::co_spawn(executor_, std::move(work),
                       [self = shared_from_this(), what = std::move(what)](const std::exception_ptr& error) {
                           if (error) {
                               self->deliver(contracts::error_message{
                                   contracts::helper_fault::internal_error,
                                   "bridge: " + what + " failed: " + exception_text(error)});
                               self->finish();
                           }
                       });
    }

    enum class state { idle, staging, running, done };

    // Never drops a line, whatever the trial has yet to read: the run's whole output may arrive at once.
    void deliver(std::string line) {
        if (!finished_) {
            lines_.post(std::move(line));
        }
    }
    void deliver(const contracts::session_message& message) {
        std::string line = contracts::serialize(message);
        line.pop_back();
        deliver(std::move(line));
    }
    // The end of the emulated session: receive() reports EOF after the lines already delivered.
    void finish() {
        if (!finished_) {
            lines_.post(std::nullopt);
            finished_ = true;
        }
        state_ = state::done;
    }
    void fail_before_start(const std::string& message) {
        deliver(contracts::error_message{contracts::helper_fault::spawn_failed, message});
        finish();
    }

    // Upload the request, hand it to the subject's user, then run it: one exec that lasts as long as the
    // subject, and whose output is the helper's report.
    asio::awaitable<void> start(std::string line) {
        // Uploaded as root, mode 0600: unreadable by a non-root subject or anything it left running.
        const std::string target = request_dir_ + "/.maka-eval-run-" + random_hex(16);
        {
            staged_request staged;
            auto source = staged.write(line);
            if (!source) {
                fail_before_start(source.error().message);
                co_return;
            }
            auto uploaded = co_await bridge_.upload(*source, target, call_deadline);
            if (!uploaded) {
                co_await discard(target); // a failed upload may still have left part of it
                fail_before_start("cannot upload the run request: " + uploaded.error().message);
                co_return;
            }
        }
        if (uid_ != 0 && !root_supervisor_) {
            // Runners upload as root (docker cp makes the file root:root, mode kept): the helper run as the
            // subject's user could not read it.
            const std::vector<std::string> adopt{helper_,     "adopt",
                                                 "--request", target,
                                                 "--uid",     std::to_string(uid_),
                                                 "--gid",     std::to_string(gid_)};
            bridge_exec request{sh_join(adopt), {}, "root", seconds(60), {}};
            auto adopted = co_await bridge_.exec(std::move(request), call_deadline);
            if (!adopted || adopted->exit_code != 0) {
                co_await discard(target);
                fail_before_start("cannot give the run request to uid " + std::to_string(uid_) + ": " +
                                  (adopted ? tail_of(adopted->out + adopted->err) : adopted.error().message));
                co_return;
            }
        }
        if (killed_) {
            co_await discard(target);
            co_return;
        }
        // No `started`: the subject's pid exists only inside the environment, and nothing here needs it.
        state_ = state::running;
        request_ = target; // the run's identity for `cancel --run-request`
        const std::vector<std::string> run{helper_, "run", "--request", target};
        bridge_exec request{sh_join(run), cwd_, step_user(), std::nullopt, cancel_command()};
        if (!helper_on_host_.empty()) {
            request.on_abandon_source = helper_on_host_;
            request.on_abandon_target = helper_;
        }
        auto ran = co_await bridge_.exec(std::move(request), run_deadline);
        if (!ran) {
            deliver(contracts::error_message{contracts::helper_fault::run_failed,
                                             "the subject's run failed: " + ran.error().message});
            finish();
            co_return;
        }
        const auto lines = session_lines(ran->out);
        for (const auto& reported : lines) {
            deliver(reported);
        }
        if (lines.empty()) {
            deliver(contracts::error_message{contracts::helper_fault::run_failed,
                                             "maka-eval-helper run exited " + std::to_string(ran->exit_code) +
                                                 ": " + tail_of(ran->out + ran->err)});
        }
        finish();
    }

    // A request that will not be run must not stay behind with its credentials.
    asio::awaitable<void> discard(std::string target) {
        bridge_exec request{"rm -f -- " + sh_quote(target), {}, "root", seconds(30), {}};
        (void)co_await bridge_.exec(std::move(request), call_deadline);
    }

    // Who runs the run and cancel execs: root under a root supervisor, else the runner's default user.
    [[nodiscard]] std::string step_user() const { return root_supervisor_ ? "root" : std::string(); }

    // The supervisor is found by its run's request (what a root subject cannot delete), else by the scope
    // file.
    std::string cancel_command() const {
        return sh_join({helper_, "cancel", "--scope", scope_, "--grace-ms", std::to_string(grace_ms_),
                        "--run-request", request_});
    }

    void begin_cancel() {
        if (!cancelling_) {
            cancelling_ = true;
            spawn(cancel(), "the cancel");
        }
    }

    // `cancel` answers 3 while the run has not yet written its scope file: ask again until it has, or
    // until the run is over.
    // A helper a root subject deleted (the cancel exits 127) is put in again, twice at most.
    asio::awaitable<void> cancel() {
        while (state_ == state::staging && !killed_) {
            co_await pause(cancel_retry);
        }
        int reinstalls = 0;
        while (state_ == state::running && !killed_) {
            bridge_exec request{cancel_command(), {}, step_user(), seconds(grace_ms_ / 1000 + 10), {}};
            auto answered = co_await bridge_.exec(std::move(request), milliseconds(grace_ms_) + seconds(15));
            if (answered && answered->exit_code == 127 && !helper_on_host_.empty() && reinstalls++ < 2) {
                (void)co_await bridge_.upload(helper_on_host_, helper_, call_deadline);
                continue;
            }
            if (!answered || answered->exit_code != 3) {
                break;
            }
            co_await pause(cancel_retry);
        }
    }

    bridge_channel& bridge_;
    std::string helper_;
    std::string helper_on_host_;
    std::string cwd_; // --cwd: where the probe ran, so where the run runs (empty: the runner's default)
    std::int64_t uid_;
    std::int64_t gid_;
    bool root_supervisor_;
    std::string request_dir_;
    asio::any_io_executor executor_;
    event_queue<std::optional<std::string>> lines_; // a line, or nullopt: the end of the session
    state state_ = state::idle;
    std::string scope_;
    std::string request_; // the run's request file, once the run is started
    std::uint64_t grace_ms_ = 35000;
    bool cancelling_ = false;
    bool killed_ = false;
    bool finished_ = false;
};

// The trial's handle on a bridge_run. Dropping it abandons the run: its coroutines stop at their next step
// (a run exec in flight is left to the runner, whose environment is being torn down or settled).
class bridge_session final : public helper_session {
  public:
    explicit bridge_session(std::shared_ptr<bridge_run> run) : run_(std::move(run)) {}
    bridge_session(const bridge_session&) = delete;
    bridge_session& operator=(const bridge_session&) = delete;
    ~bridge_session() override { run_->kill(); }

    asio::awaitable<bool> send(std::string line) override {
        const auto run = run_;
        co_return co_await run->send(std::move(line));
    }
    asio::awaitable<std::optional<std::string>> receive() override {
        const auto run = run_;
        co_return co_await run->receive();
    }
    // The runner's exec returns output only when it ends, so the helper is never asked to follow here
    // (`streams_live` is false) and sends no `output`: nothing raw ever follows a line.
    asio::awaitable<std::optional<std::string>> receive_bytes(std::size_t /*size*/) override {
        co_return std::nullopt;
    }
    void close_input() override { run_->close_input(); }
    void kill() override { run_->kill(); }

  private:
    std::shared_ptr<bridge_run> run_;
};

class bridge_backend final : public backend {
  public:
    bridge_backend(asio::any_io_executor executor, const bridge_options& options, std::string helper_on_host)
        : executor_(std::move(executor)), bridge_(executor_, options.fd), options_(options),
          helper_on_host_(std::move(helper_on_host)) {}

    std::string describe() const override {
        return "bridge (the trial runner's environment, fd " + std::to_string(options_.fd) + ")";
    }
    std::optional<unsigned> engine_calls() const override { return bridge_.calls(); }
    environment_facts facts() const override {
        const bool ours = options_.helper.in_environment.empty();
        return {"bridge", {}, {}, {}, ours ? digest_or_empty(helper_on_host_) : ""};
    }
    bool streams_live() const override { return false; }
    void abandon_pending() override { bridge_.abandon("the trial is over"); }

    // One exec on the common path (`probe`). In an environment the adapter has not run a trial in
    // (--bridge-fresh: one environment per trial is the normal case) the helper is uploaded first, so the
    // first trial costs one call more, not four; a probe that still finds no helper installs it then.
    asio::awaitable<boost::system::result<std::unique_ptr<helper_session>, relay_error>>
    open_session() override {
        const bool ours = options_.helper.in_environment.empty();
        if (helper_.empty()) {
            if (!ours) {
                helper_ = options_.helper.in_environment;
            } else {
                auto name = helper_content_name(helper_on_host_);
                if (!name) {
                    co_return name.error();
                }
                // In the root directory, which exists in every image and only root may write: the runner's
                // upload cannot create a directory, and a subject can neither replace the helper nor plant
                // one for a later trial's root execs.
                helper_ = "/" + std::string(helper_directory) + "-" + *name;
            }
        }
        start_history history{ours, false, false, true};
        if (ours && options_.fresh) {
            auto placed = co_await upload_helper();
            if (!placed) {
                co_return placed.error();
            }
            history.installed = true;
        }
        const auto attempt = [this, ours]() { return probe_helper(ours); };
        const auto apply =
            [&](start_remedy remedy) -> asio::awaitable<boost::system::result<void, relay_error>> {
            if (remedy == start_remedy::make_executable) {
                history.made_executable = true;
                co_return co_await make_executable();
            }
            history.installed = true;
            co_return co_await upload_helper();
        };
        co_return co_await start_helper(attempt, apply, history, "in the environment");
    }

    // One `probe` through the runner's exec: a session on its hello, else how it failed.
    asio::awaitable<start_attempt> probe_helper(bool ours) {
        const std::vector<std::string> probe{helper_, "probe"};
        bridge_exec request{sh_join(probe), options_.subject.cwd, {}, seconds(60), {}};
        auto probed = co_await bridge_.exec(std::move(request), call_deadline);
        if (!probed) {
            co_return start_attempt::refused(relay_error{
                relay_errc::environment, "the trial runner's environment failed: " + probed.error().message});
        }
        for (auto& line : session_lines(probed->out)) {
            auto message = contracts::parse_session_message(line);
            if (const auto* hello = message ? std::get_if<contracts::hello_message>(&*message) : nullptr) {
                co_return start_attempt::opened(std::make_unique<bridge_session>(std::make_shared<bridge_run>(
                    bridge_, helper_, ours ? helper_on_host_ : std::string(), *hello, std::move(line),
                    options_.switches_user, ours, options_.subject.cwd, executor_)));
            }
        }
        start_attempt failed;
        failed.exit_code = probed->exit_code;
        failed.said = tail_of(probed->out + probed->err);
        co_return failed;
    }

    asio::awaitable<boost::system::result<exec_output, relay_error>>
    run_helper_as_root(std::vector<std::string> args, milliseconds runs_for) override {
        args.insert(args.begin(), helper_);
        const auto runs_for_s = std::chrono::ceil<seconds>(runs_for);
        bridge_exec request{sh_join(args), {}, "root", seconds(60) + runs_for_s, {}};
        auto ran = co_await bridge_.exec(request, call_deadline + runs_for_s);
        if (ran && ran->exit_code == 127 && options_.helper.in_environment.empty() && !helper_.empty()) {
            // Deleted since the probe (a root subject can): put in again, and asked once more.
            if (co_await upload_helper()) {
                ran = co_await bridge_.exec(std::move(request), call_deadline + runs_for_s);
            }
        }
        if (ran) {
            // The caller reads one message: the helper's, not what the runner merged around it.
            const auto lines = session_lines(ran->out);
            ran->err += ran->out;
            ran->out = lines.empty() ? std::string() : lines.front() + "\n";
        }
        co_return ran;
    }

    asio::awaitable<boost::system::result<std::string, relay_error>>
    policy_namespace(std::string sidecar) override {
        const std::string probe =
            "printf %s " + sh_quote(policy::namespace_prefix) + "; readlink /proc/self/ns/net";
        auto answered = co_await bridge_.service_exec(sidecar, probe, call_deadline);
        if (!answered) {
            co_return answered.error();
        }
        // The original's `_sole_probe_line`: exactly one line with the prefix, its value stripped.
        auto ns = policy::sole_probe_line(answered->out, policy::namespace_prefix);
        if (answered->exit_code != 0 || !ns) {
            co_return relay_error{relay_errc::environment, "the policy sidecar " + sidecar +
                                                               " could not report its network namespace"};
        }
        co_return boost::system::result<std::string, relay_error>(boost::system::in_place_value,
                                                                  std::move(*ns));
    }

    asio::awaitable<void> destroy(std::optional<int>, milliseconds budget) override {
        (void)co_await bridge_.stop(budget);
    }

    // No engine to ask whether the environment still runs: a fresh root `cancel` either settles or fails.
    asio::awaitable<recovery> recover(std::optional<int>, std::string scope,
                                      recovery_window window) override {
        co_return co_await cancel_as_root(std::move(scope), window.settle_left());
    }

    std::string scope_path(const std::string& name) const override {
        return std::string(contracts::scope_directory) + "/.maka-eval-" + name + ".pid";
    }
    std::string artifacts_dir() const override { return std::string(contracts::artifacts_directory); }

  private:
    // The runner's upload writes as root and keeps the mode (0755): a root-owned binary in a root-owned
    // directory.
    asio::awaitable<boost::system::result<void, relay_error>> upload_helper() {
        auto uploaded = co_await bridge_.upload(helper_on_host_, helper_, install_deadline);
        if (!uploaded) {
            co_return relay_error{relay_errc::environment, "cannot upload maka-eval-helper to " + helper_ +
                                                               ": " + uploaded.error().message};
        }
        co_return boost::system::result<void, relay_error>{};
    }

    asio::awaitable<boost::system::result<void, relay_error>> make_executable() {
        bridge_exec finish{"chmod 0755 " + sh_quote(helper_), {}, "root", seconds(60), {}};
        auto marked = co_await bridge_.exec(std::move(finish), call_deadline);
        if (!marked || marked->exit_code != 0) {
            co_return relay_error{relay_errc::environment,
                                  "cannot make maka-eval-helper executable: " +
                                      (marked ? tail_of(marked->out + marked->err) : marked.error().message)};
        }
        co_return boost::system::result<void, relay_error>{};
    }

    asio::any_io_executor executor_;
    bridge_channel bridge_;
    bridge_options options_; // its own copy, so that it outlives whatever it was made from
    std::string helper_on_host_;
    std::string helper_;
};

} // namespace

boost::system::result<std::unique_ptr<backend>, relay_error>
make_bridge_backend(const bridge_options& options, asio::any_io_executor executor) {
    auto helper = helper_to_upload(options.helper);
    if (!helper) {
        return helper.error();
    }
    struct stat info {};
    if (options.fd < 0 || ::fstat(options.fd, &info) != 0 || !S_ISSOCK(info.st_mode)) {
        return relay_error{relay_errc::environment,
                           "--bridge-fd " + std::to_string(options.fd) +
                               " is not an open socket: the bridge backend runs under the trial runner's "
                               "adapter (relay/harbor), which passes it"};
    }
    return std::unique_ptr<backend>(std::make_unique<bridge_backend>(std::move(executor), options, *helper));
}

} // namespace maka_eval::relay
