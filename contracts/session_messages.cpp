// Relay ⇄ helper session messages: JSON mapping with field-naming failures (see session_messages.hpp).
#include "contracts/session_messages.hpp"

#include "contracts/limits.hpp"
#include "contracts/name_table.hpp"
#include "contracts/python_text.hpp"
#include "contracts/result_frame.hpp"
#include "contracts/table_category.hpp"
#include "contracts/utf8.hpp"
#include "contracts/wire_json.hpp"

#include <limits>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include <boost/json/parse.hpp>

namespace maka_eval::contracts {
namespace {

namespace json = boost::json;

constexpr name_table<session_error, 4> session_category_messages{{
    {session_error::bad_line, "session line is not a JSON object"},
    {session_error::unknown_kind, "unknown session message kind"},
    {session_error::version_mismatch, "session protocol version mismatch"},
    {session_error::bad_field, "invalid session message field"},
}};

// Reads typed fields from one object and remembers the first one that is wrong.
class reader {
  public:
    explicit reader(const json::object& object) : object_(object) {}

    [[nodiscard]] bool ok() const { return where_.empty(); }
    [[nodiscard]] const std::string& where() const { return where_; }

    std::string text(std::string_view key, bool required = true) {
        const auto* value = object_.if_contains(key);
        if (value == nullptr && !required) {
            return {};
        }
        if (value == nullptr || !value->is_string()) {
            fail(key);
            return {};
        }
        return std::string(value->get_string());
    }

    std::int64_t integer(std::string_view key, std::int64_t low, std::int64_t high,
                         std::optional<std::int64_t> fallback = {}) {
        const auto* value = object_.if_contains(key);
        if (value == nullptr && fallback) {
            return *fallback;
        }
        if (value != nullptr && value->is_uint64() &&
            value->get_uint64() <= static_cast<std::uint64_t>(high)) {
            return static_cast<std::int64_t>(value->get_uint64());
        }
        if (value == nullptr || !value->is_int64() || value->get_int64() < low || value->get_int64() > high) {
            fail(key);
            return 0;
        }
        return value->get_int64();
    }

    std::uint64_t count(std::string_view key, bool required = true, std::uint64_t fallback = 0) {
        const auto* value = object_.if_contains(key);
        if (value == nullptr && !required) {
            return fallback;
        }
        if (value != nullptr && value->is_uint64()) {
            return value->get_uint64();
        }
        if (value == nullptr || !value->is_int64() || value->get_int64() < 0) {
            fail(key);
            return 0;
        }
        return static_cast<std::uint64_t>(value->get_int64());
    }

    bool boolean(std::string_view key, bool fallback) {
        const auto* value = object_.if_contains(key);
        if (value == nullptr) {
            return fallback;
        }
        if (!value->is_bool()) {
            fail(key);
            return fallback;
        }
        return value->get_bool();
    }

    std::vector<std::string> strings(std::string_view key, bool required = true) {
        std::vector<std::string> out;
        const auto* value = object_.if_contains(key);
        if (value == nullptr && !required) {
            return out;
        }
        if (value == nullptr || !value->is_array()) {
            fail(key);
            return out;
        }
        for (const auto& item : value->get_array()) {
            if (!item.is_string()) {
                fail(std::string(key) + "[" + std::to_string(out.size()) + "]");
                return out;
            }
            out.emplace_back(item.get_string());
        }
        return out;
    }

    variables map(std::string_view key, bool required = true) {
        variables out;
        const auto* value = object_.if_contains(key);
        if (value == nullptr && !required) {
            return out;
        }
        if (value == nullptr || !value->is_object()) {
            fail(key);
            return out;
        }
        for (const auto& member : value->get_object()) {
            if (!member.value().is_string()) {
                fail(std::string(key) + "." + std::string(member.key()));
                return out;
            }
            out.emplace_back(member.key(), member.value().get_string());
        }
        return out;
    }

    const json::object* child(std::string_view key) {
        const auto* value = object_.if_contains(key);
        if (value == nullptr || !value->is_object()) {
            fail(key);
            return nullptr;
        }
        return &value->get_object();
    }

    // nullptr when absent; a present field must be an object.
    const json::object* optional_child(std::string_view key) {
        return object_.contains(key) ? child(key) : nullptr;
    }

    void fail(std::string_view where) {
        if (where_.empty()) {
            where_ = where;
        }
    }

  private:
    const json::object& object_;
    std::string where_;
};

json::object artifact_json(const artifact_summary& artifact) {
    json::object out{{"path", artifact.path},
                     {"bytes", artifact.bytes},
                     {"sha256", artifact.sha256},
                     {"written", artifact.written},
                     {"truncated", artifact.truncated}};
    if (artifact.masked > 0) {
        out["masked"] = artifact.masked;
    }
    return out;
}

std::optional<artifact_summary> artifact_from(const json::object* object, std::string& where) {
    if (object == nullptr) {
        return std::nullopt;
    }
    reader r(*object);
    artifact_summary out{r.text("path"), r.count("bytes"), r.text("sha256")};
    out.written = r.count("written", false, out.bytes);
    out.truncated = r.boolean("truncated", false);
    out.masked = r.count("masked", false, 0);
    if (!r.ok()) {
        where = r.where();
        return std::nullopt;
    }
    return out;
}

struct to_json_visitor {
    json::object operator()(const hello_message& m) const {
        return {{"kind", "hello"},
                {"version", session_protocol_version},
                {"helper", m.helper_version},
                {"cwd", m.cwd},
                {"pid", m.pid},
                {"uid", m.uid},
                {"gid", m.gid},
                {"capabilities", to_json(m.capabilities)},
                {"netns", m.net_namespace},
                {"supervisorUid", m.supervisor_uid},
                {"heartbeatMs", m.heartbeat_ms}};
    }
    json::object operator()(const run_request& m) const {
        json::array argv;
        for (const auto& arg : m.argv) {
            argv.emplace_back(arg);
        }
        json::object out{{"kind", "run"},
                         {"version", session_protocol_version},
                         {"argv", std::move(argv)},
                         {"cwd", m.cwd},
                         {"environment", to_json(m.environment)},
                         {"credentials", to_json(m.credentials)},
                         {"resultToken", m.result_token},
                         {"captureStdout", m.capture_stdout},
                         {"scopePath", m.scope_path},
                         {"artifactsDir", m.artifacts_dir},
                         {"termGraceMs", m.term_grace_ms},
                         {"killGraceMs", m.kill_grace_ms},
                         {"drainMs", m.drain_ms},
                         {"artifactLimitBytes", m.artifact_limit},
                         {"user", m.user},
                         {"keepLeftovers", m.keep_leftovers},
                         {"sharedPidNamespace", m.shared_pid_namespace},
                         {"follow", m.follow}};
        if (!m.mask.empty()) {
            json::array names;
            for (const auto& name : m.mask) {
                names.emplace_back(name);
            }
            out["mask"] = std::move(names);
        }
        if (m.input != subject_input::none) {
            out["stdin"] = to_string(m.input);
            out["rows"] = m.rows;
            out["cols"] = m.cols;
        }
        return out;
    }
    json::object operator()(const cancel_request& m) const {
        return {{"kind", "cancel"}, {"version", session_protocol_version}, {"reason", m.reason}};
    }
    json::object operator()(const started_message& m) const {
        return {{"kind", "started"},
                {"version", session_protocol_version},
                {"pid", m.pid},
                {"pgid", m.pgid},
                {"startTime", m.start_time}};
    }
    json::object operator()(const report_message& m) const {
        json::object out{
            {"kind", m.settled ? "settled" : "exited"},
            {"version", session_protocol_version},
            {"exitCode", m.exit_code},
            {"signal", m.signal},
            {"stdout", m.stdout_text},
            {"diagnostic", to_json(m.diagnostic)},
            {"artifacts",
             {{"stdout", artifact_json(m.stdout_artifact)}, {"stderr", artifact_json(m.stderr_artifact)}}},
            {"runMs", m.run_ms},
            {"peakRssKiB", m.peak_rss_kib}};
        if (m.usage) {
            out["usage"] = to_json(*m.usage);
        }
        if (!m.receipt.empty()) {
            out["receipt"] = m.receipt;
        }
        if (!m.stderr_tail.empty()) {
            out["stderrTail"] = shorten_text(m.stderr_tail, stderr_tail_bytes);
        }
        if (m.settled) {
            out["settleMs"] = m.settle_ms;
            out["signalled"] = m.signalled;
            out["reason"] = m.reason;
            out["quiesced"] = m.quiesced;
        }
        return out;
    }
    json::object operator()(const error_message& m) const {
        return {{"kind", "error"},
                {"version", session_protocol_version},
                {"code", to_string(m.code)},
                {"message", shorten_text(m.message, message_text_limit_bytes)}};
    }
    json::object operator()(const output_message& m) const {
        // The line only: `size` raw bytes follow it on the wire (serialize writes them).
        return {{"kind", "output"},
                {"version", session_protocol_version},
                {"stream", m.stream == output_stream_name::stdout_stream ? "stdout" : "stderr"},
                {"size", m.data.size()},
                {"dropped", m.dropped}};
    }
    json::object operator()(const heartbeat_message&) const {
        return {{"kind", "heartbeat"}, {"version", session_protocol_version}};
    }
    json::object operator()(const input_message& m) const {
        // The line only: `size` raw bytes follow it on the wire (serialize writes them).
        json::object out{{"kind", "input"}, {"version", session_protocol_version}};
        if (m.eof) {
            out["eof"] = true;
        } else {
            out["size"] = m.data.size();
        }
        return out;
    }
    json::object operator()(const input_taken_message& m) const {
        return {{"kind", "input-taken"}, {"version", session_protocol_version}, {"bytes", m.bytes}};
    }
    json::object operator()(const resize_message& m) const {
        return {
            {"kind", "resize"}, {"version", session_protocol_version}, {"rows", m.rows}, {"cols", m.cols}};
    }
    json::object operator()(const pinned_message& m) const {
        return {{"kind", "pinned"}, {"version", session_protocol_version}, {"ip", m.ip}, {"host", m.host}};
    }
};

constexpr name_table<subject_input, 3> input_names = {{
    {subject_input::none, "none"},
    {subject_input::pipe, "pipe"},
    {subject_input::tty, "tty"},
}};

// "" (absent) is none: what every helper before `stdin` ran with.
std::optional<subject_input> subject_input_from(std::string_view text) {
    if (text.empty()) {
        return subject_input::none;
    }
    return value_in(input_names, text);
}

constexpr name_table<helper_fault, 8> fault_names = {{
    {helper_fault::bad_request, "bad-request"},
    {helper_fault::idle, "idle"},
    {helper_fault::busy, "busy"},
    {helper_fault::identity_unavailable, "identity-unavailable"},
    {helper_fault::spawn_failed, "spawn-failed"},
    {helper_fault::artifacts_unavailable, "artifacts-unavailable"},
    {helper_fault::run_failed, "run-failed"},
    {helper_fault::internal_error, "internal-error"},
}};

failure bad_field(std::string where) {
    return {session_error::bad_field, std::move(where)};
}

} // namespace

const boost::system::error_category& session_category() noexcept {
    static const table_category instance("maka_eval.session", session_category_messages,
                                         "unknown session error");
    return instance;
}

boost::system::error_code make_error_code(session_error e) noexcept {
    return {static_cast<int>(e), session_category()};
}

std::string_view to_string(helper_fault value) {
    return name_in(fault_names, value, "internal-error");
}

std::string_view to_string(subject_input value) {
    return name_in(input_names, value, "none");
}

std::optional<helper_fault> helper_fault_from_string(std::string_view text) {
    return value_in(fault_names, text);
}

std::string failure::message() const {
    return where.empty() ? code.message() : code.message() + ": " + where;
}

void throw_exception_from_error(const failure& e, const boost::source_location&) {
    throw std::runtime_error(e.message());
}

json::object to_json(const subject_usage& usage) {
    json::object out{{"userMs", usage.user_ms},
                     {"systemMs", usage.system_ms},
                     {"peakRssKiB", usage.peak_rss_kib},
                     {"processes", usage.processes},
                     {"wallMs", usage.wall_ms}};
    if (usage.processes_lower_bound) {
        out["processesLowerBound"] = true;
    }
    return out;
}

json::object to_json(const session_message& message) {
    return std::visit(to_json_visitor{}, message);
}

namespace {

// `run` carries the credentials, which may be megabytes: written straight into one reserved line, with the
// bytes the generic path (object, then text) writes — the golden vector holds both to the same bytes —
// instead of copying every value into a JSON object first.
void append_variables(std::string& out, const variables& vars) {
    // As a JSON object has it: one member per name, where it first appears, with its last value.
    std::unordered_map<std::string_view, std::size_t> last;
    for (std::size_t i = 0; i < vars.size(); ++i) {
        last[vars[i].first] = i;
    }
    out.push_back('{');
    bool first = true;
    for (std::size_t i = 0; i < vars.size(); ++i) {
        const auto at = last.find(vars[i].first);
        if (at == last.end()) {
            continue; // written already
        }
        if (!first) {
            out.push_back(',');
        }
        first = false;
        append_wire_string(out, vars[i].first);
        out.push_back(':');
        append_wire_string(out, vars[at->second].second);
        last.erase(at);
    }
    out.push_back('}');
}

std::string serialize_run(const run_request& m) {
    std::size_t size = 1024 + m.cwd.size() + m.scope_path.size() + m.artifacts_dir.size() + m.user.size();
    for (const auto* set : {&m.environment, &m.credentials}) {
        for (const auto& [name, value] : *set) {
            size += name.size() + value.size() + 8;
        }
    }
    for (const auto& arg : m.argv) {
        size += arg.size() + 4;
    }
    for (const auto& name : m.mask) {
        size += name.size() + 4;
    }
    std::string out;
    out.reserve(size);
    auto key = [&out](std::string_view name) {
        out.push_back(',');
        append_wire_string(out, name);
        out.push_back(':');
    };
    auto text_list = [&out](const std::vector<std::string>& items) {
        out.push_back('[');
        for (std::size_t i = 0; i < items.size(); ++i) {
            if (i > 0) {
                out.push_back(',');
            }
            append_wire_string(out, items[i]);
        }
        out.push_back(']');
    };
    auto flag = [&out](bool value) { out.append(value ? "true" : "false"); };
    out.append(R"({"kind":"run","version":)").append(std::to_string(session_protocol_version));
    key("argv");
    text_list(m.argv);
    key("cwd");
    append_wire_string(out, m.cwd);
    key("environment");
    append_variables(out, m.environment);
    key("credentials");
    append_variables(out, m.credentials);
    key("resultToken");
    append_wire_string(out, m.result_token);
    key("captureStdout");
    flag(m.capture_stdout);
    key("scopePath");
    append_wire_string(out, m.scope_path);
    key("artifactsDir");
    append_wire_string(out, m.artifacts_dir);
    key("termGraceMs");
    out.append(std::to_string(m.term_grace_ms));
    key("killGraceMs");
    out.append(std::to_string(m.kill_grace_ms));
    key("drainMs");
    out.append(std::to_string(m.drain_ms));
    key("artifactLimitBytes");
    out.append(std::to_string(m.artifact_limit));
    key("user");
    append_wire_string(out, m.user);
    key("keepLeftovers");
    flag(m.keep_leftovers);
    key("sharedPidNamespace");
    flag(m.shared_pid_namespace);
    key("follow");
    flag(m.follow);
    if (!m.mask.empty()) {
        key("mask");
        text_list(m.mask);
    }
    if (m.input != subject_input::none) { // absent otherwise: the line stays what older helpers read
        key("stdin");
        append_wire_string(out, to_string(m.input));
        key("rows");
        out.append(std::to_string(m.rows));
        key("cols");
        out.append(std::to_string(m.cols));
    }
    out.append("}\n");
    return out;
}

} // namespace

std::string serialize(const session_message& message) {
    // `output` goes out many times a second when a subject is chatty: its line built directly, as the
    // generic path would build it (the golden vector holds both to the same bytes), then its bytes raw.
    if (const auto* output = std::get_if<output_message>(&message)) {
        std::string line;
        line.reserve(output->data.size() + 96);
        line.append(R"({"kind":"output","version":)")
            .append(std::to_string(session_protocol_version))
            .append(output->stream == output_stream_name::stdout_stream ? R"(,"stream":"stdout")"
                                                                        : R"(,"stream":"stderr")")
            .append(R"(,"size":)")
            .append(std::to_string(output->data.size()))
            .append(R"(,"dropped":)")
            .append(std::to_string(output->dropped))
            .append("}\n")
            .append(output->data);
        return line;
    }
    if (const auto* run = std::get_if<run_request>(&message)) {
        return serialize_run(*run);
    }
    // `input` carries a forwarded stdin (run -i), thousands of them a second: built directly too.
    if (const auto* input = std::get_if<input_message>(&message); input != nullptr && !input->eof) {
        std::string line;
        line.reserve(input->data.size() + 64);
        line.append(R"({"kind":"input","version":)")
            .append(std::to_string(session_protocol_version))
            .append(R"(,"size":)")
            .append(std::to_string(input->data.size()))
            .append("}\n")
            .append(input->data);
        return line;
    }
    return to_wire(to_json(message)) + "\n";
}

boost::system::result<session_message, failure> from_json(const json::object& object) {
    reader r(object);
    const std::string kind = r.text("kind");
    if (!r.ok()) {
        return failure{session_error::unknown_kind, "kind"};
    }
    if (r.integer("version", 0, std::numeric_limits<std::int32_t>::max()) != session_protocol_version ||
        !r.ok()) {
        return failure{session_error::version_mismatch, "version"};
    }
    constexpr std::int64_t max_ms = std::numeric_limits<std::uint32_t>::max();
    session_message out;
    if (kind == "hello") {
        hello_message m{r.text("helper"),
                        r.text("cwd"),
                        r.integer("pid", 0, std::numeric_limits<std::int32_t>::max()),
                        r.integer("uid", 0, std::numeric_limits<std::uint32_t>::max()),
                        r.integer("gid", 0, std::numeric_limits<std::uint32_t>::max()),
                        r.map("capabilities"),
                        r.text("netns")};
        // Absent from older helpers, which always ran as the subject.
        m.supervisor_uid = r.integer("supervisorUid", 0, std::numeric_limits<std::uint32_t>::max(), m.uid);
        m.heartbeat_ms = static_cast<std::uint32_t>(r.integer("heartbeatMs", 0, max_ms, 0));
        out = std::move(m);
    } else if (kind == "run") {
        run_request m;
        m.argv = r.strings("argv");
        m.cwd = r.text("cwd", false);
        m.environment = r.map("environment", false);
        m.credentials = r.map("credentials", false);
        m.result_token = r.text("resultToken");
        m.capture_stdout = r.boolean("captureStdout", true);
        m.scope_path = r.text("scopePath", false);
        m.artifacts_dir = r.text("artifactsDir", false);
        m.term_grace_ms =
            static_cast<std::uint32_t>(r.integer("termGraceMs", 0, max_ms, defaults::term_grace_ms));
        m.kill_grace_ms =
            static_cast<std::uint32_t>(r.integer("killGraceMs", 0, max_ms, defaults::kill_grace_ms));
        m.drain_ms = static_cast<std::uint32_t>(r.integer("drainMs", 0, max_ms, defaults::drain_ms));
        m.artifact_limit = r.count("artifactLimitBytes", false, default_artifact_limit_bytes);
        m.user = r.text("user", false);
        m.keep_leftovers = r.boolean("keepLeftovers", false);
        m.shared_pid_namespace = r.boolean("sharedPidNamespace", false);
        m.follow = r.boolean("follow", false);
        m.mask = r.strings("mask", false);
        const auto input = subject_input_from(r.text("stdin", false));
        if (!input) {
            r.fail("stdin");
        }
        m.input = input.value_or(subject_input::none);
        m.rows = static_cast<std::uint16_t>(r.integer("rows", 0, 65535, 0));
        m.cols = static_cast<std::uint16_t>(r.integer("cols", 0, 65535, 0));
        if (r.ok() && m.argv.empty()) {
            r.fail("argv");
        }
        if (r.ok() && !is_result_token(m.result_token)) {
            r.fail("resultToken");
        }
        out = std::move(m);
    } else if (kind == "cancel") {
        out = cancel_request{r.text("reason", false)};
    } else if (kind == "started") {
        out = started_message{r.integer("pid", 1, std::numeric_limits<std::int32_t>::max()),
                              r.integer("pgid", 1, std::numeric_limits<std::int32_t>::max()),
                              r.count("startTime")};
    } else if (kind == "exited" || kind == "settled") {
        report_message m;
        m.settled = kind == "settled";
        m.exit_code = r.integer("exitCode", 0, 255);
        m.signal = r.text("signal");
        m.stdout_text = r.text("stdout");
        const auto* diag_object = r.child("diagnostic");
        const auto diag = diag_object != nullptr ? diagnostic_from_json(*diag_object) : std::nullopt;
        if (r.ok() && !diag) {
            r.fail("diagnostic");
        }
        m.diagnostic = diag.value_or(diagnostic::none());
        if (const auto* artifacts = r.child("artifacts")) {
            reader a(*artifacts);
            std::string where;
            auto out_artifact = artifact_from(a.child("stdout"), where);
            auto err_artifact = artifact_from(a.child("stderr"), where);
            if (!out_artifact || !err_artifact) {
                r.fail("artifacts" + (where.empty() ? std::string() : "." + where));
            } else {
                m.stdout_artifact = std::move(*out_artifact);
                m.stderr_artifact = std::move(*err_artifact);
            }
        }
        m.run_ms = r.count("runMs");
        m.peak_rss_kib = r.count("peakRssKiB", false);
        if (const auto* usage = r.optional_child("usage")) {
            reader u(*usage);
            m.usage = subject_usage{u.count("userMs"),     u.count("systemMs"),
                                    u.count("peakRssKiB"), u.count("processes"),
                                    u.count("wallMs"),     u.boolean("processesLowerBound", false)};
            if (!u.ok()) {
                r.fail("usage." + u.where());
            }
        }
        m.stderr_tail = r.text("stderrTail", false);
        m.receipt = r.text("receipt", false);
        if (m.settled) {
            m.settle_ms = r.count("settleMs");
            m.signalled = r.count("signalled");
            m.reason = r.text("reason");
            m.quiesced = r.boolean("quiesced", true);
        }
        out = std::move(m);
    } else if (kind == "error") {
        const auto code = helper_fault_from_string(r.text("code"));
        if (!code) {
            r.fail("code");
        }
        out = error_message{code.value_or(helper_fault::internal_error), r.text("message")};
    } else if (kind == "pinned") {
        out = pinned_message{r.text("ip"), r.text("host")};
    } else if (kind == "output") {
        output_message m;
        const auto stream = r.text("stream");
        if (stream == "stderr") {
            m.stream = output_stream_name::stderr_stream;
        } else if (stream != "stdout") {
            r.fail("stream");
        }
        // The line says how many raw bytes follow it; whoever reads the stream takes them into `data`.
        m.size = r.count("size", true);
        if (r.ok() && m.size > output_chunk_bytes) {
            r.fail("size");
        }
        m.dropped = r.count("dropped", false);
        out = std::move(m);
    } else if (kind == "heartbeat") {
        out = heartbeat_message{};
    } else if (kind == "input") {
        input_message m;
        m.eof = r.boolean("eof", false);
        // As for `output`: the line says how many raw bytes follow it; the reader of the stream takes them.
        m.size = r.count("size", !m.eof);
        if (r.ok() && (m.size > input_chunk_bytes || (m.eof && m.size > 0))) {
            r.fail("size");
        }
        out = std::move(m);
    } else if (kind == "input-taken") {
        out = input_taken_message{r.count("bytes")};
    } else if (kind == "resize") {
        out = resize_message{static_cast<std::uint16_t>(r.integer("rows", 0, 65535)),
                             static_cast<std::uint16_t>(r.integer("cols", 0, 65535))};
    } else {
        return failure{session_error::unknown_kind, kind};
    }
    if (!r.ok()) {
        return bad_field(r.where());
    }
    return out;
}

boost::system::result<session_message, failure> parse_session_message(std::string_view line) {
    auto object = parse_object(line, session_line_limit_bytes);
    if (!object) {
        return failure{session_error::bad_line, object.error().message()};
    }
    return from_json(*object);
}

} // namespace maka_eval::contracts
