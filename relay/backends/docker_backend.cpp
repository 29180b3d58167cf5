// The docker backend (see docker_backend.hpp).
#include "relay/backends/docker_backend.hpp"

#include "contracts/limits.hpp"
#include "contracts/session_messages.hpp"
#include "posix/io.hpp"
#include "relay/backends/container_diagnosis.hpp"
#include "relay/backends/container_recovery.hpp"
#include "relay/backends/helper_binary.hpp"
#include "relay/backends/helper_start.hpp"
#include "relay/backends/host_cgroup.hpp"
#include "relay/backends/install_record.hpp"
#include "relay/backends/installed_helper.hpp"
#include "relay/backends/session_reader.hpp"
#include "relay/engine/docker_api.hpp"
#include "relay/engine/tar_archive.hpp"
#include "relay/support/relay_clock.hpp"
#include "relay/support/utc_time.hpp"

#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace maka_eval::relay {
namespace {

using asio::as_tuple;
using asio::use_awaitable;
using namespace asio::experimental::awaitable_operators;

// What a container printed, as one line: without the line ends and spaces after it (runc's messages through
// an exec's stream end in "\r\n").
std::string without_line_end(std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) {
        text.pop_back();
    }
    return text;
}

// How an exec's state is watched beside its stream (watch_exec).
constexpr auto exec_stderr_glance = std::chrono::milliseconds(20); // a look at the stream, no engine call
constexpr auto exec_first_look = std::chrono::milliseconds(1000);
constexpr auto exec_look_every = std::chrono::milliseconds(250);
constexpr auto exec_end_grace = std::chrono::milliseconds(200);

// An exec's end as its state told it, before its stream did.
struct exec_end {
    std::optional<int> code;
};

class docker_session final : public helper_session {
  public:
    // `first` is the line already read to know the helper started (its `hello`).
    docker_session(std::unique_ptr<exec_stream> stream, std::string first)
        : stream_(std::move(stream)), first_(std::move(first)) {}
    asio::awaitable<bool> send(std::string line) override {
        co_return co_await stream_->write(line); // `line` is freed with this frame (and wiped by the heap)
    }
    asio::awaitable<std::optional<std::string>> receive() override {
        if (first_) {
            auto line = std::move(first_);
            first_.reset();
            co_return line;
        }
        co_return co_await stream_->read_line(contracts::session_line_limit_bytes);
    }
    asio::awaitable<std::optional<std::string>> receive_bytes(std::size_t size) override {
        co_return co_await stream_->read_bytes(size);
    }
    void close_input() override { stream_->close_stdin(); }
    void kill() override { stream_->close(); }

  private:
    std::unique_ptr<exec_stream> stream_;
    std::optional<std::string> first_;
};

class docker_backend final : public backend {
  public:
    docker_backend(docker_api api, const docker_options& options, std::string helper_on_host)
        : api_(std::move(api)), options_(options), helper_on_host_(std::move(helper_on_host)),
          container_(options.container) {}

    std::string describe() const override {
        const auto& engine = api_.engine();
        return "docker (" + container_ + " via " + engine.url() +
               (engine.transport == engine_transport::tls ? ", mutual TLS" : "") +
               (engine.context.empty() ? "" : ", docker context " + engine.context) + ")";
    }
    std::optional<unsigned> engine_calls() const override { return api_.calls(); }
    environment_facts facts() const override {
        return {"docker", container_id_, image_id_, api_.engine().url(), helper_digest_};
    }

    // Three engine calls on every trial (inspect, exec create, exec start), the first in a container too:
    // there (nothing at the helper's path, and the install record knows of no trial) the session exec is a
    // root shell that takes the helper on its stdin, installs it and becomes it — the engine's archive
    // upload costs about a bare exec by itself. An image without /bin/sh and `head` falls back to that
    // upload; so does a helper resolve() did not find to be this build's where a trial has run, and every
    // first trial on an engine whose containers this host cannot see (remote: the reader of a session a
    // shell carried could not be checked).
    asio::awaitable<boost::system::result<std::unique_ptr<helper_session>, relay_error>>
    open_session() override {
        auto resolved = co_await resolve();
        if (!resolved) {
            co_return resolved.error();
        }
        const bool ours = options_.helper.in_environment.empty();
        if (ours && !installs_.unused_because().empty()) {
            // Said, not silent: without the record every trial pays the install again.
            const std::string line = "maka-eval-relay: no record of helper installs is kept (" +
                                     installs_.unused_because() + "): the helper goes in on every trial\n";
            (void)::write(STDERR_FILENO, line.data(), line.size());
        }
        bool installed = false; // by us, in this call
        // The cold install runs the container's own /bin/sh and head: only where no trial has run yet. Where
        // one has, a root subject may have changed them, or the helper itself (resolve() compared what is at
        // its path with this build, from outside the container): anything but this build's helper is
        // replaced through the engine, which writes it from outside, before anything there runs as root.
        // And only where this host sees the container's processes: there the session's reader is checked
        // before `run` (a shell that kept a copy of the session's input is caught). Where it does not (a
        // remote engine), no program of the container's carries the session: the engine's upload, then an
        // exec of the helper itself.
        const bool trial_ran_here = installed_ != installed_copy::genuine && installs_.knows(container_id_);
        bool stream_install = ours && installed_ == installed_copy::absent && !trial_ran_here && host_view_;
        if (ours && installed_ != installed_copy::genuine && !stream_install) {
            // A fresh container seen from afar needs no word, nor an unchecked one: the upload is their
            // normal way in.
            if (installed_ != installed_copy::unchecked &&
                (trial_ran_here || installed_ != installed_copy::absent)) {
                const std::string line =
                    "maka-eval-relay: the helper at " + helper_in_container_ + " in container " + container_ +
                    " is " + (installed_ == installed_copy::absent ? "gone" : "not this build's") +
                    " since an earlier trial: put in again through the engine\n";
                (void)::write(STDERR_FILENO, line.data(), line.size());
            }
            auto placed = co_await upload_helper();
            if (!placed) {
                co_return placed.error();
            }
            installed = true;
        }
        start_history history{ours, installed, false, false};
        const auto attempt = [&]() { return start_session(stream_install, history); };
        const auto apply =
            [&](start_remedy remedy) -> asio::awaitable<boost::system::result<void, relay_error>> {
            if (remedy == start_remedy::as_subject) {
                supervise_as_root_ = false;
                stream_install = false;
                co_return boost::system::result<void, relay_error>{};
            }
            // install: through the engine (a streamed install that failed had no shell or tools to use)
            stream_install = false;
            auto placed = co_await upload_helper();
            history.installed = placed.has_value();
            co_return placed;
        };
        co_return co_await start_helper(attempt, apply, history, "in container " + container_);
    }

    // One start of the session exec (and with `stream_install`, the helper on its stdin), up to its first
    // line: a session on hello, a final error on a refusal the relay cannot remedy, else how it failed.
    asio::awaitable<start_attempt> start_session(bool stream_install, const start_history& history) {
        const bool streaming = stream_install && supervise_as_root_;
        std::optional<posix::mapped_file> binary;
        if (streaming) {
            binary = read_helper();
            if (!binary) {
                co_return start_attempt::refused(
                    relay_error{relay_errc::environment, "cannot read " + helper_on_host_});
            }
        }
        exec_spec spec =
            streaming ? session_spec(install_and_become(binary->bytes().size())) : session_spec();
        std::string id;
        auto stream = boost::system::result<std::unique_ptr<exec_stream>, relay_error>(relay_error{});
        if (created_ && created_->first.cmd == spec.cmd && created_->first.user == spec.user &&
            (installed_ == installed_copy::genuine || history.installed)) {
            // Created by resolve() while it compared the copy, started now that this build's helper is at
            // its path (found there, or just put in through the engine).
            id = created_->second;
            stream = co_await api_.start_exec(container_, id);
        } else {
            stream = co_await api_.exec(container_, std::move(spec), id);
        }
        created_.reset();
        if (!stream) {
            co_return start_attempt::refused(stream.error());
        }
        // The helper's first line within the engine's deadline: an engine that started the exec and then
        // never delivers its output fails the trial here with a clear error. Beside it the exec's state,
        // which says at once when the exec failed to start while its stream stays open (Podman).
        (*stream)->expire_after(api_.timeout());
        std::optional<std::string> first;
        exec_end end;
        auto& s = **stream;
        if (binary) {
            // Written while reading: an exec that failed to start (no /bin/sh) reads nothing, and its error
            // arrives on the stream while the write would wait for ever.
            auto done =
                co_await ((s.write(binary->bytes()) || s.read_line(contracts::session_line_limit_bytes)) ||
                          watch_exec(s, id, end));
            if (done.index() == 1) {
                first = std::move(std::get<1>(done));
            } else if (done.index() == 0) {
                auto line =
                    co_await (s.read_line(contracts::session_line_limit_bytes) || watch_exec(s, id, end));
                first = line.index() == 0 ? std::move(std::get<0>(line)) : std::nullopt;
            }
        } else {
            auto line = co_await (s.read_line(contracts::session_line_limit_bytes) || watch_exec(s, id, end));
            first = line.index() == 0 ? std::move(std::get<0>(line)) : std::nullopt;
        }
        if (s.expired() && !end.code) {
            co_return start_attempt::refused(
                relay_error{relay_errc::engine,
                            api_.unanswered("no first line from the helper in container " + container_)});
        }
        (*stream)->expire_after(std::nullopt); // from here the trial's heartbeat watches the session
        // The first line must be the helper's hello: when the binary is missing, the engine writes its own
        // error ("OCI runtime exec failed …") into the stream instead.
        const auto hello =
            first
                ? contracts::parse_session_message(*first)
                : boost::system::result<contracts::session_message, contracts::failure>(contracts::failure{});
        const bool answered = hello && (std::holds_alternative<contracts::hello_message>(*hello) ||
                                        std::holds_alternative<contracts::error_message>(*hello));
        if (answered && (history.installed || streaming)) {
            installs_.add(container_id_, helper_name_); // the helper went in: a trial runs here
        }
        if (const auto* said = hello ? std::get_if<contracts::hello_message>(&*hello) : nullptr) {
            hello_pid_ = said->pid; // its reader is checked once `ready` is out (reader_refusal)
            co_return start_attempt::opened(
                std::make_unique<docker_session>(std::move(*stream), std::move(*first)));
        }
        if (const auto* refused = hello ? std::get_if<contracts::error_message>(&*hello) : nullptr) {
            if (refused->code == contracts::helper_fault::identity_unavailable && supervise_as_root_) {
                not_root_because_ = refused->message;
                start_attempt failed;
                failed.identity_refused = true;
                failed.said = refused->message;
                co_return failed;
            }
            co_return start_attempt::refused(
                relay_error{relay_errc::environment,
                            "maka-eval-helper in container " + container_ + ": " + refused->message});
        }
        start_attempt failed;
        failed.exit_code = end.code ? *end.code : co_await exit_code_of(id);
        failed.said = without_line_end(first ? *first : (*stream)->stderr_text());
        failed.streamed = streaming;
        co_return failed;
    }

    [[nodiscard]] std::string not_root_because() const override { return not_root_because_; }
    [[nodiscard]] std::string earlier_owner() const override { return earlier_owner_; }
    void mark_owned_by_subject(const std::string& why) override {
        installs_.mark_root_trial(container_id_, utc_now() + ", " + why);
    }

    asio::awaitable<boost::system::result<exec_output, relay_error>>
    run_helper_as_root(std::vector<std::string> args, std::chrono::milliseconds runs_for) override {
        auto resolved = co_await resolve();
        if (!resolved) {
            co_return resolved.error();
        }
        args.insert(args.begin(), helper_in_container_);
        // "0", not "root": FROM-scratch images have no /etc/passwd to look the name up in.
        co_return co_await one_shot(container_, std::move(args), "0", runs_for);
    }

    asio::awaitable<boost::system::result<std::string, relay_error>>
    policy_namespace(std::string sidecar) override {
        auto resolved = co_await resolve();
        if (!resolved) {
            co_return resolved.error();
        }
        // The sidecar is the compose service of that name beside the subject, or a container of that name.
        std::string target = sidecar;
        if (!compose_project_.empty()) {
            auto found = co_await api_.find_compose_container(compose_project_, sidecar);
            if (found) {
                target = *found;
            }
        }
        std::vector<std::string> probe{"readlink", "/proc/self/ns/net"};
        auto output = co_await one_shot(target, std::move(probe), {}, {});
        if (!output) {
            co_return output.error();
        }
        if (output->exit_code != 0) {
            co_return relay_error{relay_errc::environment, "the policy sidecar " + sidecar +
                                                               " could not report its network namespace"};
        }
        co_return boost::system::result<std::string, relay_error>(boost::system::in_place_value,
                                                                  without_line_end(output->out));
    }

    asio::awaitable<void> destroy(std::optional<int>, std::chrono::milliseconds budget) override {
        relay_timer timer(co_await asio::this_coro::executor, budget);
        co_await (remove_container() || timer.async_wait(as_tuple(use_awaitable)));
    }

    // The helper died without a report: what the engine says of the container decides
    // (container_recovery.hpp).
    asio::awaitable<recovery> recover(std::optional<int>, std::string scope,
                                      recovery_window window) override {
        recovery_steps steps;
        steps.diagnose = [this]() -> asio::awaitable<container_diagnosis> {
            co_return diagnose_container(co_await api_.inspect_container(container_), started_at_);
        };
        if (resolved_ && options_.helper.in_environment.empty()) {
            steps.refresh_helper = [this]() -> asio::awaitable<void> { (void)co_await upload_helper(); };
        }
        steps.cancel = [this, &scope](std::chrono::milliseconds runs_for) -> asio::awaitable<recovery> {
            co_return co_await cancel_as_root(std::move(scope), runs_for);
        };
        co_return co_await recover_container(steps, window);
    }

    asio::awaitable<std::optional<outside_fault>> diagnose_outside() override {
        const auto d = diagnose_container(co_await api_.inspect_container(container_), started_at_);
        switch (d.condition) {
        case container_condition::running:
            // The engine's flag misses a process other than the first; the cgroup's own count does not.
            if (const auto now = host_oom_kills(container_pid_, container_id_);
                now && oom_kills_before_ && *now > *oom_kills_before_) {
                co_return outside_fault{
                    false, "the kernel killed " + std::to_string(*now - *oom_kills_before_) +
                               " process(es) of container " + container_ +
                               " for memory while the subject ran (its memory cgroup's "
                               "oom_kill count went from " +
                               std::to_string(*oom_kills_before_) + " to " + std::to_string(*now) + ")"};
            }
            co_return std::nullopt;
        case container_condition::memory_killed:
            co_return outside_fault{false, "the kernel killed a process of container " + container_ +
                                               " for memory (" + d.detail + ")"};
        case container_condition::paused:
            co_return outside_fault{true, "container " + container_ +
                                              " is paused (docker pause; the engine says " + d.detail +
                                              "): its processes are frozen, not hung"};
        case container_condition::restarted:
            co_return outside_fault{false, "container " + container_ + " was restarted from outside (" +
                                               d.detail + "): the subject's processes ended with it"};
        case container_condition::stopped:
            co_return outside_fault{false, "container " + container_ + " was stopped from outside (" +
                                               d.detail + ")"};
        case container_condition::out_of_memory:
            co_return outside_fault{false,
                                    "container " + container_ + " ran out of memory (" + d.detail + ")"};
        case container_condition::missing:
            co_return outside_fault{false, "container " + container_ + " was removed (" + d.detail + ")"};
        case container_condition::engine_unreachable:
            co_return outside_fault{false, "the Docker engine does not answer (" + d.detail +
                                               "): the container's state is unknown"};
        }
        co_return std::nullopt;
    }

    std::string scope_path(const std::string& name) const override {
        return std::string(contracts::scope_directory) + "/.maka-eval-" + name + ".pid";
    }
    std::string artifacts_dir() const override { return std::string(contracts::artifacts_directory); }

  private:
    asio::awaitable<void> remove_container() {
        installs_.forget(container_id_);
        (void)co_await api_.request("POST", "/containers/" + container_ + "/kill");
        (void)co_await api_.request("DELETE", "/containers/" + container_ + "?force=1&v=1");
    }

    // Once: the container (by name, or by compose labels) and where the helper lives in it. No engine call
    // unless compose labels must be looked up.
    asio::awaitable<boost::system::result<void, relay_error>> resolve() {
        if (resolved_) {
            co_return boost::system::result<void, relay_error>{};
        }
        if (!options_.compose_project.empty()) {
            auto found =
                co_await api_.find_compose_container(options_.compose_project, options_.compose_service);
            if (!found) {
                co_return found.error();
            }
            container_ = *found;
        }
        // One inspect per trial: the container's state for a clear error, its configured user (whom a plain
        // `docker exec` would run as: the subject's identity), and its compose project (for the sidecar).
        // The helper is hashed (for its name in the container) while the engine answers it.
        boost::system::result<container_facts, relay_error> facts = relay_error{};
        if (!options_.helper.in_environment.empty()) {
            helper_in_container_ = options_.helper.in_environment; // mounted by the user (compose overlay)
            facts = co_await api_.inspect_container(container_);
        } else {
            auto both = co_await (api_.inspect_container(container_) && hash_helper_between_turns());
            facts = std::move(std::get<0>(both));
            auto& digest = std::get<1>(both);
            if (!digest) {
                co_return digest.error();
            }
            helper_digest_ = std::move(*digest);
            helper_name_ = helper_name_of_digest(helper_digest_);
            helper_in_container_ = "/" + std::string(helper_directory) + "/" + helper_name_;
        }
        if (!facts) {
            co_return facts.error();
        }
        if (facts->paused || !facts->running) {
            co_return relay_error{relay_errc::environment, "container " + container_ + " is " +
                                                               (facts->paused ? "paused" : "not running")};
        }
        container_id_ = facts->id;
        image_id_ = facts->image;
        container_pid_ = facts->pid;
        oom_kills_before_ = host_oom_kills(container_pid_, container_id_);
        started_at_ = facts->started_at; // a restart from outside changes it
        readonly_rootfs_ = facts->readonly_rootfs;
        subject_user_ = options_.subject.user.empty() ? facts->user : options_.subject.user;
        compose_project_ = facts->compose_project;
        if (options_.helper.in_environment.empty()) {
            // What is at our helper's path, read from outside the container: every root exec runs this
            // build's helper or none. MAKA_EVAL_CHECK_HELPER_THROUGH_ENGINE=1 skips the look from this host
            // (the tests' way to what a remote engine gets).
            const char* through_engine = std::getenv("MAKA_EVAL_CHECK_HELPER_THROUGH_ENGINE");
            std::optional<installed_copy> found;
            if (through_engine == nullptr || std::string_view(through_engine) != "1") {
                host_comparison comparison(facts->pid, facts->id, helper_in_container_, helper_on_host_);
                if (installs_.knows(container_id_)) {
                    // A trial ran here, so the copy is most likely this build's: the session's exec is
                    // created (not started) while it is compared, the engine on its core and the comparison
                    // on this one, 64 KiB per turn. open_session() starts it only once this build's helper is
                    // at its path (found genuine, or put in again through the engine first).
                    exec_spec spec = session_spec();
                    auto both = co_await (api_.create_exec(container_, spec) && in_turns(comparison));
                    if (auto& id = std::get<0>(both)) {
                        created_.emplace(std::move(spec), std::move(*id));
                    }
                } else {
                    while (comparison.step()) {
                    }
                }
                found = comparison.verdict();
            }
            host_view_ = found.has_value();
            if (!found && installs_.knows(container_id_) && !readonly_rootfs_) {
                // Seen from afar, where a trial ran before: this build's helper is written in again through
                // the engine rather than read back and compared. Both are the engine's, from outside the
                // container, so what runs as root is this build's either way; the write is one call as the
                // read is, and far cheaper on Podman (its archive download costs ~230 ms whatever the size,
                // its upload ~5 ms). A read-only root filesystem still gets the comparison.
                found = installed_copy::unchecked;
            }
            installed_ = found ? *found : co_await installed_helper();
        }
        if (auto root = installs_.root_trial(container_id_)) {
            earlier_owner_ = "owned by a root subject since an earlier trial (" + *root + ")";
        } else if (options_.helper.in_environment.empty() && installed_ != installed_copy::absent &&
                   !installs_.knows(container_id_)) {
            // A helper of ours is there, but no record of who ran: another host's relay, another user's,
            // or a record pruned. What ran is unknown, so it counts as a root subject's.
            earlier_owner_ = "used by an earlier trial this host has no record of (a maka-eval-helper is "
                             "already in it), so whether its subject ran as root is unknown";
        }
        resolved_ = true;
        co_return boost::system::result<void, relay_error>{};
    }

    // Before anything secret is sent: the session's reader established from this host (session_reader.hpp).
    // Only a root helper's session is checked (a same-uid one is within the subject's reach by design).
    // Where the container's processes cannot be seen from here (a remote engine), the record of root
    // subjects is what stands (earlier_owner()), and the log says that the reader was not checked.
    std::optional<std::string> reader_refusal() override {
        if (!supervise_as_root_ || !options_.helper.in_environment.empty() || hello_pid_ <= 0) {
            return std::nullopt;
        }
        const auto reader = check_session_reader(container_pid_, container_id_, hello_pid_, helper_on_host_);
        switch (reader.verdict) {
        case reader_verdict::ours_alone:
            return std::nullopt;
        case reader_verdict::unreachable:
            if (!reader_unchecked_said_) {
                reader_unchecked_said_ = true;
                const std::string line =
                    "maka-eval-relay: the helper session's reader in container " + container_ +
                    " cannot be checked from this host (a remote engine, or a "
                    "container without a cgroup of its own, as rootless Podman's on "
                    "cgroup v1): credentials rely on the record of root subjects alone\n";
                (void)::write(STDERR_FILENO, line.data(), line.size());
            }
            return std::nullopt;
        case reader_verdict::not_ours:
        case reader_verdict::shared:
            break;
        }
        return "nothing was sent into container " + container_ + ": " + reader.detail +
               ", so another program than this build's helper could read the trial's "
               "credentials (left by an earlier trial's root subject?); use a fresh container";
    }

    // The session's exec: the helper at its path, or `cmd` (the install that becomes it). A root supervisor;
    // the subject runs as the container's user (or --user), out of its reach. --cwd (Harbor's task workdir on
    // the fast path) as `docker exec -w`: the helper reports it in hello, and the subject starts there.
    [[nodiscard]] exec_spec session_spec(std::vector<std::string> cmd = {}) const {
        std::vector<std::string> args{"session"};
        if (supervise_as_root_ && !subject_user_.empty()) {
            args.insert(args.end(), {"--user", subject_user_});
        }
        if (options_.keep_leftovers) {
            args.emplace_back("--keep-leftovers");
        }
        if (cmd.empty()) {
            cmd.push_back(helper_in_container_);
        }
        cmd.insert(cmd.end(), args.begin(), args.end());
        return exec_spec{std::move(cmd), supervise_as_root_ ? "0" : subject_user_, options_.subject.cwd,
                         true};
    }

    // Runs `work` (a helper_hashing or a host_comparison) to its end, one step per turn of the event loop, so
    // that the engine's answers are read in between. true: the parallel group wants a value.
    template <class Steps>
    static asio::awaitable<bool> in_turns(Steps& work) {
        const auto executor = co_await asio::this_coro::executor;
        while (work.step()) {
            co_await asio::post(executor, use_awaitable);
        }
        co_return true;
    }

    // The helper's SHA-256, 64 KiB per turn of the event loop: alongside the inspect, whose request goes out
    // and whose answer is read between the turns while the engine works on another core. Hashed before it,
    // the megabyte cost every trial half a millisecond on top of the inspect.
    // Where this very file was hashed before (the record remembers its digest), nothing is read.
    asio::awaitable<boost::system::result<std::string, relay_error>> hash_helper_between_turns() {
        helper_hashing hashing(helper_on_host_);
        if (hashing.file_info()) {
            if (auto known = installs_.remembered_digest(*hashing.file_info())) {
                co_return boost::system::result<std::string, relay_error>(boost::system::in_place_value,
                                                                          *known);
            }
        }
        co_await in_turns(hashing);
        auto digest = hashing.digest();
        if (digest && hashing.file_info()) {
            installs_.remember_digest(*hashing.file_info(), *digest);
        }
        co_return digest;
    }

    // What is at the helper's path in the container, downloaded through the engine (never by anything in
    // the container, which a root subject may have changed): this build's helper, or not.
    asio::awaitable<installed_copy> installed_helper() {
        auto got = co_await api_.request("GET", "/containers/" + container_ +
                                                    "/archive?path=" + helper_in_container_);
        if (got && got->status == 404) {
            co_return installed_copy::absent;
        }
        if (!got || got->status != 200) {
            co_return installed_copy::other; // replaced through the engine, which then says what is wrong
        }
        co_return compare_download(got->body, helper_digest_);
    }

    // The helper binary, whole (under 1 MiB), mapped: only when it goes into a container.
    [[nodiscard]] std::optional<posix::mapped_file> read_helper() const {
        auto mapped = posix::mapped_file::of(helper_on_host_);
        if (!mapped || mapped->bytes().empty()) {
            return std::nullopt;
        }
        return std::move(*mapped);
    }

    // A root shell that reads exactly `size` bytes of stdin into a file of its own, makes it executable and
    // execs it as `install`: the helper itself checks it is whole, moves itself to its content-addressed
    // path (a rename: no half-written helper is ever there), links maka-eval-helper to it and runs the
    // session (session_spec() appends its arguments), the rest of stdin being the session's. Two processes in
    // the container (head, chmod) besides the shell. Nothing follows the helper on stdin before its `hello`,
    // so `head` cannot read past it.
    [[nodiscard]] std::vector<std::string> install_and_become(std::size_t size) const {
        static constexpr std::string_view script =
            "set -e; umask 022; t=\"/.maka-eval-incoming.$$\"; trap 'rm -f \"$t\"' EXIT; "
            "head -c \"$1\" > \"$t\"; chmod 0755 \"$t\"; s=\"$1\" d=\"$2\" n=\"$3\"; shift 3; "
            "exec \"$t\" install --from \"$t\" --size \"$s\" --directory \"$d\" --name \"$n\" -- \"$@\"";
        return {"/bin/sh",
                "-c",
                std::string(script),
                "maka-eval-install",
                std::to_string(size),
                "/" + std::string(helper_directory),
                helper_name_};
    }

    asio::awaitable<boost::system::result<void, relay_error>> upload_helper() {
        auto archive =
            tar_one_file_from(helper_directory, helper_name_, helper_on_host_, 0755, "maka-eval-helper");
        if (!archive) {
            co_return relay_error{relay_errc::environment, "cannot read " + helper_on_host_};
        }
        std::string target = "/containers/" + container_ + "/archive?path=/";
        auto put = co_await api_.request("PUT", std::move(target), std::move(*archive), "application/x-tar");
        if (!put || put->status != 200) {
            if (readonly_rootfs_) {
                // The engine refuses the upload (or drops the connection mid-body): its own inspect said why.
                co_return relay_error{relay_errc::environment,
                                      "container " + container_ +
                                          " has a read-only root filesystem (HostConfig.ReadonlyRootfs: "
                                          "docker run --read-only), so maka-eval-helper cannot be put in it: "
                                          "mount the helper into the container (a volume or bind mount) and "
                                          "pass --helper-in-container PATH, or start it without --read-only"};
            }
            co_return relay_error{
                relay_errc::environment,
                "cannot put maka-eval-helper into container " + container_ +
                    (put ? " (HTTP " + std::to_string(put->status) + ")" : ": " + put.error().message) +
                    ": mount it into the container and pass --helper-in-container PATH"};
        }
        co_return boost::system::result<void, relay_error>{};
    }

    // An exec's stream and its state, watched together: Podman may keep the stream of an exec that failed to
    // start (no /bin/sh in the image) open while its state already says Running=false, ExitCode 127. Beside
    // a read of the stream this asks the engine for the exec's state when the exec has written on its
    // stderr (where the engine puts its own error) and once it has run for `exec_first_look` — a helper
    // that starts answers long before, so a healthy trial makes no extra engine call — then every
    // `exec_look_every`. Once the exec has ended, the stream gets `exec_end_grace` to deliver what is left
    // and is then closed; `end` has the code. It never completes on its own: it ends with the read beside it.
    asio::awaitable<void> watch_exec(exec_stream& stream, std::string id, exec_end& end) {
        relay_timer timer(co_await asio::this_coro::executor);
        const auto begun = relay_clock::now();
        auto next_look = begun + exec_first_look;
        std::size_t said = 0;
        while (!end.code) {
            timer.expires_after(exec_stderr_glance);
            co_await timer.async_wait(as_tuple(use_awaitable));
            const auto now = relay_clock::now();
            if (stream.stderr_text().size() == said && now < next_look) {
                continue;
            }
            said = stream.stderr_text().size();
            next_look = std::max(next_look, now + exec_look_every);
            auto state = co_await api_.inspect_exec(id);
            if (!state) {
                break; // the stream's own deadline covers an engine that stopped answering
            }
            end.code = state->ended_with();
        }
        if (end.code) {
            stream.expire_after(exec_end_grace);
        }
        timer.expires_at(relay_clock::time_point::max());
        co_await timer.async_wait(as_tuple(use_awaitable));
    }

    // The stream ends a moment before the engine records the exit code: ask until it has one (5 s at most),
    // but not past an engine that does not answer (-1).
    asio::awaitable<int> exit_code_of(const std::string& id) {
        relay_timer timer(co_await asio::this_coro::executor);
        for (int attempt = 0; attempt < 250; ++attempt) {
            auto code = co_await api_.exec_exit_code(id);
            if (!code) {
                co_return -1;
            }
            if (*code) {
                co_return **code;
            }
            timer.expires_after(std::chrono::milliseconds(20));
            co_await timer.async_wait(as_tuple(use_awaitable));
        }
        co_return -1;
    }

    // One exec to its end: its output within `runs_for` (what the command itself may take) and the engine's
    // timeout on top.
    asio::awaitable<boost::system::result<exec_output, relay_error>>
    one_shot(std::string container, std::vector<std::string> cmd, std::string user,
             std::chrono::milliseconds runs_for) {
        std::string id;
        exec_spec spec{std::move(cmd), std::move(user), {}, false};
        auto stream = co_await api_.exec(container, std::move(spec), id);
        if (!stream) {
            co_return stream.error();
        }
        (*stream)->expire_after(runs_for + api_.timeout());
        exec_output out;
        exec_end end;
        auto rest = co_await ((*stream)->read_rest(1U << 20U) || watch_exec(**stream, id, end));
        if (rest.index() == 0) {
            out.out = std::move(std::get<0>(rest));
        }
        if ((*stream)->expired() && !end.code) {
            co_return relay_error{relay_errc::engine,
                                  api_.unanswered("no end of an exec in container " + container)};
        }
        out.err = (*stream)->stderr_text();
        out.exit_code = end.code ? *end.code : co_await exit_code_of(id);
        co_return out;
    }

    docker_api api_;
    docker_options options_; // its own copy, so that it outlives whatever it was made from
    std::string helper_on_host_;
    std::string container_;

    std::string image_id_;         // the container's image, by the engine's id (for a signed result)
    std::string container_id_;     // the engine's id: names, unlike ids, are reused by later containers
    std::string started_at_;       // State.StartedAt at the trial's start: another later means a restart
    bool readonly_rootfs_ = false; // HostConfig.ReadonlyRootfs: why an upload to / fails
    install_record installs_;
    std::string helper_digest_; // SHA-256 of this build's helper
    std::string helper_name_;
    std::string helper_in_container_;
    installed_copy installed_ = installed_copy::absent; // what resolve() found at helper_in_container_
    std::string subject_user_;                          // "" when the container runs as root
    std::string compose_project_;                       // the container's, for the policy sidecar
    bool supervise_as_root_ = true;
    std::string not_root_because_; // the helper's refusal as root, when the session fell back to same-uid
    std::string earlier_owner_;    // whose the container is since an earlier trial (earlier_owner())
    long container_pid_ = 0;       // State.Pid: the container's first process, on the engine's host
    bool reader_unchecked_said_ = false;
    long hello_pid_ = 0;     // the helper's pid in the container, as its hello said
    bool host_view_ = false; // this host sees the container's files and processes (the engine's host)
    std::optional<std::uint64_t> oom_kills_before_; // the memory cgroup's oom_kill count before the trial
    bool resolved_ = false;
    std::optional<std::pair<exec_spec, std::string>> created_; // the session exec resolve() created, its id
};

} // namespace

boost::system::result<std::unique_ptr<backend>, relay_error>
make_docker_backend(const docker_options& options, asio::any_io_executor executor) {
    auto helper = helper_to_upload(options.helper);
    if (!helper) {
        return helper.error();
    }
    auto api = docker_api::open(std::move(executor), options.engine, options.engine_timeout);
    if (!api) {
        return api.error();
    }
    return std::unique_ptr<backend>(std::make_unique<docker_backend>(std::move(*api), options, *helper));
}

} // namespace maka_eval::relay
