// Fixture for the layering check: core must not include ml.
#include "core/status.h"
#include "ml/model.h"
