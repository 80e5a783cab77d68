// A --target path that does not exist yet: created for the run (a regular file, or a directory for the files
// layout) by `kvio gen` and the object-level replays, removed again when the run is refused before it writes.
#pragma once
#include <string>

namespace kvio::workload {

/// Creates `path` when nothing exists there (lstat ENOENT): an empty regular file (mode 0644; the caller grows it)
/// or, with `directory`, a directory (0755). Its parent directory must exist; nothing is created under /dev/ (a
/// missing device is a typo, not a file to make) except in /dev/shm (a tmpfs for users). An existing path is left to
/// inspect_target to judge. The destructor removes what was created unless keep() was called. Throws kvio::Error
/// "target PATH does not exist and cannot be created as a regular file: REASON".
class CreatedTarget {
public:
    CreatedTarget(const std::string& path, bool directory);
    ~CreatedTarget();
    CreatedTarget(const CreatedTarget&) = delete;
    CreatedTarget& operator=(const CreatedTarget&) = delete;
    /// True when this object created the path.
    bool created() const { return !path_.empty(); }
    /// The run wrote to it: it stays.
    void keep() { path_.clear(); }

private:
    std::string path_;
    bool directory_ = false;
};

}  // namespace kvio::workload
