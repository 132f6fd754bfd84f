// Readers of the job file's sections that live in their own files (job_config.cc reads the
// rest). Each reads its mapping strictly (ConfigReader::finish) and checks its values.
#pragma once

#include "config/config_reader.h"
#include "trib/config/strategy_config.h"

namespace trib::config {

StrategyConfig read_strategy(ConfigReader r);

}  // namespace trib::config
