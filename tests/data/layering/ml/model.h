// Fixture: ml uses its one declared dependency.
#include "core/env.h"
