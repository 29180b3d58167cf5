// The local backend (see local_backend.hpp).
// clang-format off
#include "relay/support/boost_process_prelude.hpp" // first: see there
// clang-format on

#include "relay/backends/local_backend.hpp"

#include "contracts/session_messages.hpp"
#include "relay/backends/helper_binary.hpp"

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/readable_pipe.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/writable_pipe.hpp>
#include <boost/asio/write.hpp>
#include <boost/process/v2/environment.hpp>
#include <boost/process/v2/process.hpp>
#include <boost/process/v2/start_dir.hpp>
#include <boost/process/v2/stdio.hpp>

extern char** environ;

namespace maka_eval::relay {
namespace {

namespace bp = boost::process::v2;
using asio::use_awaitable;

// What the relay knows and the subject must not: its token and its own settings.
bool relay_private(std::string_view entry) {
    for (const std::string_view name : {"MAKA_EVAL_RELAY_TOKEN=", "MAKA_EVAL_EGRESS_REQUIRED=",
                                        "MAKA_EVAL_EGRESS_ALLOWED_HOST=", "MAKA_EVAL_HELPER="}) {
        if (entry.starts_with(name)) {
            return true;
        }
    }
    return false;
}

std::vector<std::string> helper_environment() {
    std::vector<std::string> env;
    for (char** entry = environ; *entry != nullptr; ++entry) {
        if (!relay_private(*entry)) {
            env.emplace_back(*entry);
        }
    }
    return env;
}

class local_session final : public helper_session {
  public:
    // `cwd` empty: the relay's own working directory.
    local_session(const asio::any_io_executor& executor, const std::string& helper,
                  const std::vector<std::string>& args, const std::string& cwd)
        : stdin_(executor), stdout_(executor),
          process_(executor, helper, args, bp::process_stdio{stdin_, stdout_, {}},
                   bp::process_environment(helper_environment()),
                   bp::process_start_dir(cwd.empty() ? std::string(".") : cwd)) {}

    ~local_session() override {
        boost::system::error_code ignored;
        stdin_.close(ignored);
        stdout_.close(ignored);
        if (process_.running(ignored)) {
            process_.terminate(ignored);
        }
        process_.wait(ignored);
    }
    local_session(const local_session&) = delete;
    local_session& operator=(const local_session&) = delete;

    asio::awaitable<bool> send(std::string line) override {
        boost::system::error_code ec;
        co_await asio::async_write(stdin_, asio::buffer(line), asio::redirect_error(use_awaitable, ec));
        co_return !ec;
    }

    asio::awaitable<std::optional<std::string>> receive() override {
        boost::system::error_code ec;
        const std::size_t size = co_await asio::async_read_until(
            stdout_, asio::dynamic_buffer(buffer_, contracts::session_line_limit_bytes), '\n',
            asio::redirect_error(use_awaitable, ec));
        if (ec) {
            co_return std::nullopt;
        }
        std::string line = buffer_.substr(0, size - 1);
        buffer_.erase(0, size);
        co_return line;
    }

    asio::awaitable<std::optional<std::string>> receive_bytes(std::size_t size) override {
        if (buffer_.size() < size) {
            boost::system::error_code ec;
            co_await asio::async_read(stdout_, asio::dynamic_buffer(buffer_),
                                      asio::transfer_at_least(size - buffer_.size()),
                                      asio::redirect_error(use_awaitable, ec));
            if (buffer_.size() < size) {
                co_return std::nullopt;
            }
        }
        std::string bytes = buffer_.substr(0, size);
        buffer_.erase(0, size);
        co_return bytes;
    }

    void close_input() override {
        boost::system::error_code ignored;
        stdin_.close(ignored);
    }

    void kill() override {
        boost::system::error_code ignored;
        ::kill(process_.id(), SIGKILL);
        stdin_.close(ignored);
    }

  private:
    asio::writable_pipe stdin_;
    asio::readable_pipe stdout_;
    bp::process process_;
    std::string buffer_;
};

class local_backend final : public backend {
  public:
    local_backend(asio::any_io_executor executor, std::string helper, std::filesystem::path work,
                  std::string user, std::string cwd)
        : executor_(std::move(executor)), helper_(std::move(helper)), work_(std::move(work)),
          user_(std::move(user)), cwd_(std::move(cwd)) {}

    std::string describe() const override { return "local (" + work_.string() + ")"; }
    environment_facts facts() const override { return {"local", {}, {}, {}, digest_or_empty(helper_)}; }
    bool is_host() const override { return true; }

    asio::awaitable<boost::system::result<std::unique_ptr<helper_session>, relay_error>>
    open_session() override {
        try {
            // As root with --user: a root supervisor and the subject as that user, as in a container.
            // On this host nothing an earlier run left is ours to stop (the trial says so in `run` too).
            std::vector<std::string> args{"session", "--keep-leftovers"};
            if (!user_.empty()) {
                args.insert(args.end(), {"--user", user_});
            }
            co_return std::make_unique<local_session>(executor_, helper_, args, cwd_);
        } catch (const std::exception& error) {
            co_return relay_error{relay_errc::environment, "cannot start " + helper_ + ": " + error.what()};
        }
    }

    asio::awaitable<boost::system::result<exec_output, relay_error>>
    run_helper_as_root(std::vector<std::string>, std::chrono::milliseconds) override {
        co_return relay_error{
            relay_errc::environment,
            "the local backend cannot pin the egress proxy (it would edit this host's /etc/hosts)"};
    }

    asio::awaitable<boost::system::result<std::string, relay_error>> policy_namespace(std::string) override {
        co_return relay_error{
            relay_errc::environment,
            "the local backend has no egress policy sidecar: egress isolation cannot be checked"};
    }

    asio::awaitable<void> destroy(std::optional<int> subject_pgid, std::chrono::milliseconds) override {
        // The helper is killed by its session; what it supervised is the subject's group.
        if (subject_pgid && *subject_pgid > 1) {
            ::kill(-*subject_pgid, SIGKILL);
        }
        co_return;
    }

    // No root exec here: the helper was our child, and what it supervised is the subject's group.
    asio::awaitable<recovery> recover(std::optional<int> subject_pgid, std::string,
                                      recovery_window window) override {
        co_await destroy(subject_pgid, window.settle_left());
        co_return recovery::settled;
    }

    std::string scope_path(const std::string& name) const override {
        return (work_ / "agent" / (".maka-eval-" + name + ".pid")).string();
    }
    std::string artifacts_dir() const override { return (work_ / "artifacts").string(); }

  private:
    asio::any_io_executor executor_;
    std::string helper_;
    std::filesystem::path work_;
    std::string user_;
    std::string cwd_;
};

} // namespace

boost::system::result<std::unique_ptr<backend>, relay_error>
make_local_backend(const local_options& options, asio::any_io_executor executor) {
    auto helper = locate_helper(options.helper.on_host);
    if (!helper) {
        return helper.error();
    }
    if (!options.subject.user.empty() && ::geteuid() != 0) {
        return relay_error{relay_errc::environment,
                           "--user on the local backend needs the relay to run as root (it supervises the "
                           "subject as root and starts it as that user)"};
    }
    std::filesystem::path work = options.work_dir;
    std::error_code ec;
    if (work.empty()) {
        std::string pattern = (std::filesystem::temp_directory_path(ec) / "maka-eval-relay-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr) {
            return relay_error{relay_errc::environment,
                               "cannot create a work directory under " +
                                   std::filesystem::temp_directory_path(ec).string()};
        }
        work = pattern;
    } else if (::mkdir(work.c_str(), 0700) != 0 && errno != EEXIST) {
        // Only the last component: a mistyped parent is an error, not a tree made silently.
        return relay_error{relay_errc::usage, "--work-dir " + work.string() + ": " + std::strerror(errno)};
    }
    std::filesystem::create_directories(work / "agent", ec);
    if (ec) {
        return relay_error{relay_errc::environment,
                           "cannot create " + (work / "agent").string() + ": " + ec.message()};
    }
    std::filesystem::permissions(work / "agent", std::filesystem::perms::owner_all, ec);
    return std::unique_ptr<backend>(std::make_unique<local_backend>(
        std::move(executor), std::move(*helper), work, options.subject.user, options.subject.cwd));
}

} // namespace maka_eval::relay
