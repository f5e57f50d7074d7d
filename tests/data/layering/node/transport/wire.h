// Fixture: a nested module including the module it sits in.
#include "core/env.h"
#include "node/daemon.h"
