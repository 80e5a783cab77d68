#include "workload/serving/request.h"

namespace kvio::serving {

const char* phase_name(RequestPhase p) {
    switch (p) {
        case RequestPhase::Prefill:
            return "prefill";
        case RequestPhase::Decode:
            return "decode";
        case RequestPhase::PrefillDecode:
            break;
    }
    return "prefill_decode";
}

}  // namespace kvio::serving
