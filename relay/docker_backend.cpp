// The docker backend (see docker_backend.hpp).
#include "relay/docker_backend.hpp"

#include "contracts/digest.hpp"
#include "contracts/session_messages.hpp"
#include "relay/docker_api.hpp"
#include "relay/tar_archive.hpp"

#include <fstream>
#include <sstream>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace maka_eval::relay {
namespace {

using asio::as_tuple;
using asio::use_awaitable;
using namespace asio::experimental::awaitable_operators;

constexpr std::string_view helper_directory = ".maka-eval";

class docker_session final : public helper_session {
  public:
    explicit docker_session(std::unique_ptr<exec_stream> stream) : stream_(std::move(stream)) {}
    asio::awaitable<bool> send(std::string line) override {
        co_return co_await stream_->write(std::move(line));
    }
    asio::awaitable<std::optional<std::string>> receive() override {
        co_return co_await stream_->read_line(contracts::session_line_limit_bytes);
    }
    void close_input() override { stream_->close_stdin(); }
    void kill() override { stream_->close(); }

  private:
    std::unique_ptr<exec_stream> stream_;
};

class docker_backend final : public backend {
  public:
    docker_backend(asio::any_io_executor executor, const common_options& options, std::string helper_on_host)
        : api_(executor, docker_host()), options_(options), helper_on_host_(std::move(helper_on_host)),
          container_(options.env_spec.starts_with("docker:") ? options.env_spec.substr(7) : std::string()) {}

    std::string describe() const override { return "docker (" + container_ + " via " + api_.host() + ")"; }

    asio::awaitable<boost::system::result<std::unique_ptr<helper_session>, backend_error>>
    open_session() override {
        auto ready = co_await prepare();
        if (!ready) {
            co_return ready.error();
        }
        exec_spec spec{{helper_in_container_, "session"}, {}, {}, true};
        std::string id;
        auto stream = co_await api_.exec(container_, std::move(spec), id);
        if (!stream) {
            co_return backend_error{stream.error().message};
        }
        co_return std::unique_ptr<helper_session>(std::make_unique<docker_session>(std::move(*stream)));
    }

    asio::awaitable<boost::system::result<exec_output, backend_error>>
    run_helper_as_root(std::vector<std::string> args) override {
        auto ready = co_await prepare();
        if (!ready) {
            co_return ready.error();
        }
        args.insert(args.begin(), helper_in_container_);
        // "0", not "root": FROM-scratch images have no /etc/passwd to look the name up in.
        co_return co_await one_shot(container_, std::move(args), "0");
    }

    asio::awaitable<boost::system::result<std::string, backend_error>>
    policy_namespace(std::string sidecar) override {
        auto ready = co_await prepare();
        if (!ready) {
            co_return ready.error();
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
        auto output = co_await one_shot(target, std::move(probe), {});
        if (!output) {
            co_return output.error();
        }
        if (output->exit_code != 0) {
            co_return backend_error{"the policy sidecar " + sidecar +
                                    " could not report its network namespace"};
        }
        std::string ns = output->out;
        while (!ns.empty() && (ns.back() == '\n' || ns.back() == '\r' || ns.back() == ' ')) {
            ns.pop_back();
        }
        co_return boost::system::result<std::string, backend_error>(boost::system::in_place_value,
                                                                    std::move(ns));
    }

    asio::awaitable<void> destroy(std::optional<int>, std::chrono::milliseconds budget) override {
        asio::steady_timer timer(co_await asio::this_coro::executor, budget);
        co_await (remove_container() || timer.async_wait(as_tuple(use_awaitable)));
    }

    std::string scope_path(const std::string& name) const override {
        return "/logs/agent/.maka-eval-" + name + ".pid";
    }
    std::string artifacts_dir() const override { return "/logs/artifacts"; }

  private:
    static std::string docker_host() {
        auto host = process_env("DOCKER_HOST");
        return host && !host->empty() ? *host : std::string("unix:///var/run/docker.sock");
    }

    asio::awaitable<void> remove_container() {
        (void)co_await api_.request("POST", "/containers/" + container_ + "/kill");
        (void)co_await api_.request("DELETE", "/containers/" + container_ + "?force=1&v=1");
    }

    // Once per trial: engine version, the container (running, not paused), the helper inside it.
    asio::awaitable<boost::system::result<void, backend_error>> prepare() {
        if (prepared_) {
            co_return boost::system::result<void, backend_error>{};
        }
        auto version = co_await api_.negotiate();
        if (!version) {
            co_return backend_error{version.error().message};
        }
        if (!options_.compose_project.empty()) {
            auto found =
                co_await api_.find_compose_container(options_.compose_project, options_.compose_service);
            if (!found) {
                co_return backend_error{found.error().message};
            }
            container_ = *found;
        }
        auto info = co_await api_.inspect_container(container_);
        if (!info) {
            co_return backend_error{info.error().message};
        }
        const auto& state = info->at("State").as_object();
        if (state.at("Paused").as_bool()) {
            co_return backend_error{"container " + container_ + " is paused"};
        }
        if (!state.at("Running").as_bool()) {
            co_return backend_error{"container " + container_ + " is not running"};
        }
        const auto& labels = info->at("Config").as_object().at("Labels");
        if (labels.is_object()) {
            if (const auto* project = labels.as_object().if_contains("com.docker.compose.project")) {
                compose_project_ = std::string(project->as_string());
            }
        }
        auto placed = co_await place_helper();
        if (!placed) {
            co_return placed.error();
        }
        prepared_ = true;
        co_return boost::system::result<void, backend_error>{};
    }

    asio::awaitable<boost::system::result<void, backend_error>> place_helper() {
        if (!options_.helper_in_container.empty()) {
            helper_in_container_ = options_.helper_in_container; // mounted by the user (compose overlay)
            co_return boost::system::result<void, backend_error>{};
        }
        std::ifstream in(helper_on_host_, std::ios::binary);
        std::ostringstream bytes;
        bytes << in.rdbuf();
        const std::string binary = bytes.str();
        if (binary.empty()) {
            co_return backend_error{"cannot read " + helper_on_host_};
        }
        // Content-addressed: present means this very build is there already.
        const std::string name = "helper-" + contracts::sha256_hex(binary).substr(0, 16);
        helper_in_container_ = "/" + std::string(helper_directory) + "/" + name;
        auto present = co_await api_.request("HEAD", "/containers/" + container_ +
                                                         "/archive?path=" + helper_in_container_);
        if (present && present->status == 200) {
            co_return boost::system::result<void, backend_error>{};
        }
        auto put = co_await api_.request(
            "PUT", "/containers/" + container_ + "/archive?path=/",
            tar_one_file(helper_directory, name, binary, 0755, "maka-eval-helper"), "application/x-tar");
        if (!put || put->status != 200) {
            co_return backend_error{"cannot put maka-eval-helper into container " + container_ +
                                    (put ? " (HTTP " + std::to_string(put->status) + "; a read-only root?)"
                                         : ": " + put.error().message) +
                                    ": mount it into the container and pass --helper-in-container PATH"};
        }
        co_return boost::system::result<void, backend_error>{};
    }

    asio::awaitable<boost::system::result<exec_output, backend_error>>
    one_shot(std::string container, std::vector<std::string> cmd, std::string user) {
        std::string id;
        exec_spec spec{std::move(cmd), std::move(user), {}, false};
        auto stream = co_await api_.exec(container, std::move(spec), id);
        if (!stream) {
            co_return backend_error{stream.error().message};
        }
        exec_output out;
        out.out = co_await (*stream)->read_rest(1U << 20U);
        out.err = (*stream)->stderr_text();
        // The stream ends a moment before the engine records the exit code.
        asio::steady_timer timer(co_await asio::this_coro::executor);
        for (int attempt = 0; attempt < 250; ++attempt) {
            auto code = co_await api_.exec_exit_code(id);
            if (code) {
                out.exit_code = *code;
                break;
            }
            timer.expires_after(std::chrono::milliseconds(20));
            co_await timer.async_wait(as_tuple(use_awaitable));
        }
        co_return out;
    }

    docker_api api_;
    const common_options& options_;
    std::string helper_on_host_;
    std::string container_;
    std::string compose_project_;
    std::string helper_in_container_;
    bool prepared_ = false;
};

} // namespace

boost::system::result<std::unique_ptr<backend>, backend_error>
make_docker_backend(const common_options& options, asio::any_io_executor executor) {
    auto helper = locate_helper(options.helper_path);
    if (!helper && options.helper_in_container.empty()) {
        return helper.error();
    }
    return std::unique_ptr<backend>(
        std::make_unique<docker_backend>(std::move(executor), options, helper ? *helper : std::string()));
}

} // namespace maka_eval::relay
