// Everything a user of trib_collectives needs: the group and its operations.
#pragma once

#include "trib/collectives/allgather.h"
#include "trib/collectives/allreduce.h"
#include "trib/collectives/barrier.h"
#include "trib/collectives/broadcast.h"
#include "trib/collectives/group.h"
