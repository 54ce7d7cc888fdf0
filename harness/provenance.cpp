#include "provenance.hpp"
