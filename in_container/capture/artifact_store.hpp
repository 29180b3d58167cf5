// Where the subject's artifacts are written while it runs, and how they become /logs/artifacts' files.
//
// /logs/artifacts is often writable by the subject (Harbor makes it 777), and what is there gets uploaded
// and published. So a root helper writes each artifact into a staging directory of its own inside it
// (0700, root's: the subject can neither enter it nor open what is inside), and publishes the files once the
// subject has exited or been settled, by renaming them over their final names: fresh root-owned files that
// the subject never had a way to write, whatever it planted or swapped at those names meanwhile (a file, a
// symlink or a FIFO is replaced, a directory is moved aside, never followed or deleted). Same filesystem, so
// publishing copies nothing, and a process the subject left holding the output keeps appending to the
// published file (the receipt then says the file was not complete).
//
// A helper that is not root (the subject's own user on the bridge or the local host) cannot keep anything
// from a same-uid subject: it writes the files in place, fresh inodes as before.
#pragma once

#include <string>
#include <string_view>
#include <sys/types.h>

#include <boost/system/result.hpp>

namespace maka_eval::in_container {

class artifact_store {
  public:
    // Opens (and creates 0700 if missing, never through a symlink) the artifacts directory `path`, and the
    // staging directory inside it when we are root. A failure names the path and the reason.
    static boost::system::result<artifact_store, std::string> open(const std::string& path, gid_t group);
    artifact_store(artifact_store&& other) noexcept;
    artifact_store& operator=(artifact_store&&) = delete;
    artifact_store(const artifact_store&) = delete;
    artifact_store& operator=(const artifact_store&) = delete;
    ~artifact_store();

    // A fresh, empty file for `name`: staged, or in place. Owned by us, readable by `group`. -1 with errno.
    // `reserve` bytes of disk are set aside for it now (where the filesystem can), so that the small files
    // written at the end (usage, receipt) still fit when the subject's output has filled the disk.
    [[nodiscard]] int create(std::string_view name, std::size_t reserve = 0) const;
    // `name` becomes the artifacts directory's own (staged: renamed into place; in place: nothing to do).
    // False with errno when it could not be.
    bool publish(std::string_view name) const;
    // Syncs the artifacts directory (the renames), then removes the staging directory if it is empty.
    void finish() const;
    [[nodiscard]] bool staged() const { return staging_ >= 0; }

  private:
    artifact_store(int directory, int staging, std::string staging_name, gid_t group)
        : directory_(directory), staging_(staging), staging_name_(std::move(staging_name)), group_(group) {}
    int directory_ = -1; // the artifacts directory (O_PATH)
    int staging_ = -1;   // ours inside it (O_PATH), or -1: in place
    std::string staging_name_;
    gid_t group_ = 0;
};

} // namespace maka_eval::in_container
