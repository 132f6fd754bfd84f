#include "trib/optim/adamw.h"

namespace trib {

AdamW::AdamW(AdamOptions options) : Adam(options, true) {}

}  // namespace trib
