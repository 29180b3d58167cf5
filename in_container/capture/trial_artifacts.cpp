// The trial's artifacts, from creation to publication (see trial_artifacts.hpp).
#include "in_container/capture/trial_artifacts.hpp"

#include "contracts/limits.hpp"
#include "contracts/receipt.hpp"
#include "contracts/wire_json.hpp"
#include "in_container/base/io.hpp"

#include <cerrno>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

namespace maka_eval::in_container {
namespace {

// Why an earlier trial's artifact cannot be replaced, when that is the reason (a root subject's file in a
// sticky directory, and this helper is not root): said, since "Operation not permitted" alone names nothing.
std::string not_replaceable_because(const std::string& dir, const std::string& path, int error) {
    struct stat file {};
    struct stat directory {};
    if ((error != EPERM && error != EACCES) || ::lstat(path.c_str(), &file) != 0 ||
        ::stat(dir.c_str(), &directory) != 0 || file.st_uid == ::geteuid()) {
        return {};
    }
    return " (an earlier trial's file, owned by uid " + std::to_string(file.st_uid) + "; " +
           ((directory.st_mode & S_ISVTX) != 0
                ? "the directory is sticky, so only its owner or root may replace it"
                : "this helper runs as uid " + std::to_string(::geteuid())) +
           ")";
}

} // namespace

trial_artifacts::~trial_artifacts() = default;

boost::system::result<void, std::string> trial_artifacts::open(const std::string& dir, gid_t group,
                                                               std::uint64_t limit) {
    directory_ = dir;
    out.name = std::string(contracts::stdout_artifact_name);
    err.name = std::string(contracts::stderr_artifact_name);
    out.path = dir + "/" + out.name;
    err.path = dir + "/" + err.name;
    out.limit = err.limit = limit;
    auto store = artifact_store::open(dir, group);
    if (!store) {
        return store.error();
    }
    store_.emplace(std::move(*store));
    // The small files get their disk space now: a subject that fills the disk still gets its receipt.
    const auto create = [&](std::string_view name,
                            std::size_t reserve) -> boost::system::result<int, std::string> {
        const int fd = store_->create(name, reserve);
        if (fd < 0) {
            const int error = errno;
            const std::string path = dir + "/" + std::string(name);
            return path + ": " + std::strerror(error) + not_replaceable_because(dir, path, error);
        }
        return fd;
    };
    for (auto* stream : {&out, &err}) {
        auto fd = create(stream->name, 0);
        if (!fd) {
            return fd.error();
        }
        stream->artifact = *fd;
    }
    for (const auto& [owner, name] : {std::pair{&usage_fd_, contracts::usage_artifact_name},
                                      std::pair{&receipt_fd_, contracts::receipt_artifact_name}}) {
        auto fd = create(name, 4096);
        if (!fd) {
            return fd.error();
        }
        *owner = posix::unique_fd(*fd);
    }
    return {};
}

void trial_artifacts::mask_with(const contracts::secret_masker& masker) {
    out.masker = masker;
    err.masker = masker;
}

void trial_artifacts::write_usage(const contracts::subject_usage& usage) {
    const std::string line = contracts::to_wire(contracts::to_json(usage)) + "\n";
    if (write_all(usage_fd_.get(), line)) {
        usage_digest_.update(line);
        usage_bytes_ = line.size();
    } else {
        log_line("cannot write " + std::string(contracts::usage_artifact_name) + ": " + std::strerror(errno));
    }
}

// Everything is written and published first, then synced together: the files, the receipt and the renames
// then sit in the filesystem's running transaction, which one commit can carry whole (ext4 commits a
// transaction at once), where syncing each before the next was written forced a commit per step.
// `executed` still follows the syncs. A sync the disk refuses is rare: the receipt is then written again,
// saying so, and synced on its own.
std::string trial_artifacts::publish(bool drained) {
    if (!store_) {
        return {};
    }
    bool usage_synced = true;
    int usage_error = 0;
    auto receipt_text = [&] {
        contracts::artifact_receipt usage_entry{
            std::string(contracts::usage_artifact_name), usage_bytes_, usage_digest_.hex(), true, {}, 0};
        if (!usage_synced) {
            usage_entry.complete = false;
            usage_entry.incomplete = std::string("the disk refused a write: ") + std::strerror(usage_error);
        }
        const std::vector<contracts::artifact_receipt> entries{out.receipt_entry(drained),
                                                               err.receipt_entry(drained), usage_entry};
        return contracts::to_wire(contracts::to_json(entries)) + "\n";
    };
    std::string text = receipt_text();
    if (!write_all(receipt_fd_.get(), text)) {
        log_line("cannot write " + std::string(contracts::receipt_artifact_name) + ": " +
                 std::strerror(errno));
    }
    for (const auto name : {contracts::stdout_artifact_name, contracts::stderr_artifact_name,
                            contracts::usage_artifact_name, contracts::receipt_artifact_name}) {
        if (!store_->publish(name)) {
            log_line("cannot publish " + std::string(name) + " into " + directory_ + ": " +
                     std::strerror(errno));
        }
    }
    const bool out_synced = out.sync(); // both are synced, whatever the first says
    const bool err_synced = err.sync();
    usage_synced = !usage_fd_ || ::fdatasync(usage_fd_.get()) == 0;
    usage_error = usage_synced ? 0 : errno;
    usage_fd_ = posix::unique_fd();
    if (!out_synced || !err_synced || !usage_synced) {
        text = receipt_text();
        // Over the first text, inside the space reserved for it (a full disk still takes it), then cut to
        // size.
        if (::pwrite(receipt_fd_.get(), text.data(), text.size(), 0) != static_cast<ssize_t>(text.size()) ||
            ::ftruncate(receipt_fd_.get(), static_cast<off_t>(text.size())) != 0) {
            log_line("cannot rewrite " + std::string(contracts::receipt_artifact_name) + ": " +
                     std::strerror(errno));
        }
    }
    if (::fdatasync(receipt_fd_.get()) != 0) {
        log_line("cannot write " + std::string(contracts::receipt_artifact_name) + ": " +
                 std::strerror(errno));
    }
    receipt_fd_ = posix::unique_fd();
    store_->finish();
    return text;
}

} // namespace maka_eval::in_container
