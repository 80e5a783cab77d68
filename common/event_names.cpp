#include "common/event_names.h"

namespace kvio {

size_t rwbs_chars(uint32_t opf, char (&out)[8]) {
    size_t n = 0;
    if (opf & KVIO_F_PREFLUSH) out[n++] = 'F';
    switch (opf & KVIO_OP_MASK) {
        case KVIO_OP_WRITE:
            out[n++] = 'W';
            break;
        case KVIO_OP_DISCARD:
            out[n++] = 'D';
            break;
        case KVIO_OP_SECURE_ERASE:
            out[n++] = 'D', out[n++] = 'E';
            break;
        case KVIO_OP_FLUSH:
            out[n++] = 'F';
            break;
        case KVIO_OP_READ:
            out[n++] = 'R';
            break;
        default:
            out[n++] = 'N';
            break;
    }
    if (opf & KVIO_F_FUA) out[n++] = 'F';
    if (opf & KVIO_F_RAHEAD) out[n++] = 'A';
    if (opf & KVIO_F_SYNC) out[n++] = 'S';
    if (opf & KVIO_F_META) out[n++] = 'M';
    return n;
}

std::string rwbs_from_opf(uint32_t opf) {
    char c[8];
    size_t n = rwbs_chars(opf, c);
    return std::string(c, n);
}

const char* op_name_from_opf(uint32_t opf) {
    switch (opf & KVIO_OP_MASK) {
        case KVIO_OP_READ:
            return "read";
        case KVIO_OP_WRITE:
            return "write";
        case KVIO_OP_FLUSH:
            return "flush";
        case KVIO_OP_DISCARD:
        case KVIO_OP_SECURE_ERASE:
            return "discard";
        default:
            return "other";
    }
}

const char* op_name_from_nvme_opcode(uint8_t opcode) {
    switch (opcode) {
        case KVIO_NVME_FLUSH:
            return "flush";
        case KVIO_NVME_WRITE:
            return "write";
        case KVIO_NVME_READ:
            return "read";
        case KVIO_NVME_DSM:
            return "discard";
        default:
            return "other";
    }
}

const char* syscall_name(uint32_t nr) {
    static const char* names[KVIO_SYSCALLS] = {
        "read",    "write",    "pread64", "pwrite64",  "readv",     "writev",         "preadv",    "pwritev",
        "preadv2", "pwritev2", "fsync",   "fdatasync", "fadvise64", "io_uring_enter", "io_submit", "io_getevents"};
    return nr < KVIO_SYSCALLS ? names[nr] : "?";
}

}  // namespace kvio
