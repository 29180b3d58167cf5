// The host-side record of helper installs: found again, forgotten with its container, and never kept in a
// directory others could plant entries in.
#include "relay/backends/install_record.hpp"
#include "support/skip.hpp"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <doctest/doctest.h>

namespace {

namespace fs = std::filesystem;
using maka_eval::relay::install_record;

struct scratch_dir {
    fs::path path = fs::temp_directory_path() / ("install-record-" + std::to_string(::getpid()));
    scratch_dir() {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~scratch_dir() { fs::remove_all(path); }
    scratch_dir(const scratch_dir&) = delete;
    scratch_dir& operator=(const scratch_dir&) = delete;
};

TEST_CASE("an install is found again for that container and helper only, and forgotten with the container") {
    scratch_dir dir;
    const install_record record((dir.path / "r").string());
    CHECK_FALSE(record.contains("abc123", "maka-eval-helper-1"));
    record.add("abc123", "maka-eval-helper-1");
    CHECK(record.contains("abc123", "maka-eval-helper-1"));
    CHECK_FALSE(record.contains("abc123", "maka-eval-helper-2")); // another build of the helper
    CHECK_FALSE(record.contains("def456", "maka-eval-helper-1"));
    // Some helper went into abc123 (an earlier trial ran there), none into def456.
    CHECK(record.knows("abc123"));
    CHECK_FALSE(record.knows("def456"));
    CHECK_FALSE(record.knows("abc12"));
    CHECK((fs::status(dir.path / "r").permissions() & fs::perms::all) == fs::perms::owner_all);
    record.forget("abc123");
    CHECK_FALSE(record.contains("abc123", "maka-eval-helper-1"));
    CHECK_FALSE(record.knows("abc123"));
}

TEST_CASE("names that are not plain words are never paths, and a shared directory is not used") {
    scratch_dir dir;
    const install_record record((dir.path / "r").string());
    record.add("../escape", "h");
    record.add("id", "../../h");
    CHECK_FALSE(record.contains("../escape", "h"));
    for (const auto& entry : fs::directory_iterator(dir.path / "r")) {
        CHECK(entry.path().filename() == ".tidied"); // when the record was last tidied: nothing else
    }
    // A directory others may write into (or a symbolic link to one) could hold planted entries.
    fs::create_directories(dir.path / "open");
    ::chmod((dir.path / "open").c_str(), 0777);
    const install_record open((dir.path / "open").string());
    open.add("abc", "h");
    CHECK_FALSE(open.contains("abc", "h"));
    fs::create_directory_symlink(dir.path / "r", dir.path / "link");
    const install_record linked((dir.path / "link").string());
    linked.add("abc", "h");
    CHECK_FALSE(linked.contains("abc", "h"));
}

TEST_CASE("the record's directory is held once opened: swapped for a link, nothing is created or deleted "
          "through it") {
    scratch_dir dir;
    const install_record record((dir.path / "r").string());
    record.add("abc", "h");
    fs::create_directories(dir.path / "elsewhere" / "abc");
    std::ofstream(dir.path / "elsewhere" / "abc" / "h") << "";
    fs::rename(dir.path / "r", dir.path / "moved");
    fs::create_directory_symlink(dir.path / "elsewhere", dir.path / "r");
    record.forget("abc");
    CHECK(fs::exists(dir.path / "elsewhere" / "abc" / "h")); // not deleted through the link
    CHECK_FALSE(fs::exists(dir.path / "moved" / "abc"));     // the real one
    record.add("def", "h");
    CHECK_FALSE(fs::exists(dir.path / "elsewhere" / "def"));
    CHECK(fs::exists(dir.path / "moved" / "def" / "h"));
}

TEST_CASE("opening the record moves the flat entries of earlier builds into their containers' directories "
          "and drops entries older than a day, at most once an hour") {
    scratch_dir dir;
    const auto r = dir.path / "r";
    fs::create_directories(r);
    fs::permissions(r, fs::perms::owner_all);
    std::ofstream(r / "abc+helper-1") << "";
    fs::create_directories(r / "old");
    std::ofstream(r / "old" / "helper-1") << "";
    const auto two_days_ago = fs::file_time_type::clock::now() - std::chrono::hours(48);
    fs::last_write_time(r / "old", two_days_ago);
    {
        const install_record record(r.string());
        CHECK(record.knows("abc")); // a trial ran there before the upgrade
        CHECK(record.contains("abc", "helper-1"));
        CHECK_FALSE(fs::exists(r / "abc+helper-1"));
        CHECK_FALSE(record.knows("old"));
        CHECK_FALSE(fs::exists(r / "old"));
    }
    // Tidied a moment ago: the next relay does not list the directory again.
    fs::create_directories(r / "stale");
    fs::last_write_time(r / "stale", two_days_ago);
    {
        const install_record record(r.string());
        CHECK(record.knows("stale"));
    }
    fs::last_write_time(r / ".tidied", fs::file_time_type::clock::now() - std::chrono::hours(2));
    const install_record record(r.string());
    CHECK_FALSE(record.knows("stale"));
    CHECK(record.knows("abc"));
}

TEST_CASE("a parent directory of another user's is not used, and the reason is kept to be said") {
    maka_eval::test::require_root("to make a directory another user owns");
    scratch_dir dir;
    fs::create_directories(dir.path / "theirs");
    REQUIRE(::chown((dir.path / "theirs").c_str(), 1000, 1000) == 0);
    ::chmod((dir.path / "theirs").c_str(), 0700);
    const install_record record((dir.path / "theirs" / "maka-eval-relay").string());
    record.add("abc", "h");
    CHECK_FALSE(record.contains("abc", "h"));
    CHECK_FALSE(fs::exists(dir.path / "theirs" / "maka-eval-relay"));
    CHECK(record.unused_because().find("is owned by uid 1000, not by us") != std::string::npos);
}

TEST_CASE("a record directory that cannot be made on a full file system says so, not that it is missing") {
    maka_eval::test::require_root("to mount a file system of its own");
    scratch_dir dir;
    const auto full = dir.path / "full";
    fs::create_directories(full);
    // Two inodes: the root directory and one file, so that no directory can be made in it.
    REQUIRE(::mount("tmpfs", full.c_str(), "tmpfs", 0, "size=64k,nr_inodes=2,mode=1777") == 0);
    std::ofstream(full / "filler") << "x";
    const install_record record((full / "maka-eval-relay").string());
    record.add("abc", "h");
    CHECK_FALSE(record.contains("abc", "h"));
    CHECK(record.unused_because().find("maka-eval-relay: No space left on device") != std::string::npos);
    CHECK(::umount2(full.c_str(), MNT_DETACH) == 0);
}

} // namespace

TEST_CASE("a helper's digest is remembered for that very file only, and not while it may still be written") {
    scratch_dir dir;
    const install_record record((dir.path / "r").string());
    const std::string digest(64, 'a');
    const fs::path file = dir.path / "helper";
    std::ofstream(file) << "helper bytes";
    struct stat info {};
    REQUIRE(::stat(file.c_str(), &info) == 0);
    // Just written: its times could miss a write in the same clock tick, so it is not remembered yet.
    record.remember_digest(info, digest);
    CHECK_FALSE(record.remembered_digest(info));
    // Settled (its change time two seconds back, as stat would say of a file left alone).
    info.st_ctim.tv_sec -= 3;
    record.remember_digest(info, digest);
    CHECK(record.remembered_digest(info) == digest);
    // Another file, another size, another change: not that digest.
    for (const auto change :
         {+[](struct stat& s) { ++s.st_ino; }, +[](struct stat& s) { ++s.st_size; },
          +[](struct stat& s) { ++s.st_mtim.tv_nsec; }, +[](struct stat& s) { ++s.st_ctim.tv_nsec; }}) {
        struct stat other = info;
        change(other);
        CHECK_FALSE(record.remembered_digest(other));
    }
    // Only a digest is taken from the entry: anything else in it is ignored.
    record.remember_digest(info, std::string(63, 'a') + "Z");
    CHECK_FALSE(record.remembered_digest(info));
    // Without a usable record nothing is remembered.
    const install_record none((dir.path / "missing-parent" / "r").string());
    none.remember_digest(info, digest);
    CHECK_FALSE(none.remembered_digest(info));
}

namespace {

TEST_CASE("a root subject's trial is remembered for its container: the first one named, forgotten with it") {
    scratch_dir dir;
    const install_record record((dir.path / "record").string());
    CHECK_FALSE(record.root_trial("abc"));
    record.mark_root_trial("abc", "2026-12-05T19:40:02Z, subject uid 0");
    record.mark_root_trial("abc", "a later one");
    REQUIRE(record.root_trial("abc"));
    CHECK(*record.root_trial("abc") == "2026-12-05T19:40:02Z, subject uid 0");
    CHECK_FALSE(record.root_trial("abd"));
    CHECK_FALSE(record.root_trial("../abc"));
    // The mark is not a helper entry, but the container is known.
    CHECK(record.knows("abc"));
    CHECK_FALSE(record.contains("abc", ".root-trial"));
    record.forget("abc");
    CHECK_FALSE(record.root_trial("abc"));
}

} // namespace
