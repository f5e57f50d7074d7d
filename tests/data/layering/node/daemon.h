// Fixture: node includes core and node/transport, never ml.
#include "core/env.h"
#include "node/transport/wire.h"
