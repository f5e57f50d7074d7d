#include "ml/model.h"
#include "node/daemon.h"
