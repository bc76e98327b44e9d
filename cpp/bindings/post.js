// Appended inside the Emscripten factory (--post-js), where PThread is in scope.
// The package uses the first two to stop this instance's pthread Web Workers on
// dispose(), and in Node to keep idle workers from holding the process open.
Module['attnscopeWorkers'] = function () {
  return typeof PThread === 'undefined' ? [] : PThread.unusedWorkers.concat(PThread.runningWorkers);
};
Module['attnscopeTerminateWorkers'] = function () {
  if (typeof PThread !== 'undefined') PThread.terminateAllThreads();
};
// Rows of causal attention weights from `src` (the heap; whole rows of nK values, the first being row `first`)
// into `dst`, a new array, at `at`: row i is zero after key i, so only keys 0..i are copied, and the pages of `dst`
// that hold only zeros are never touched. See WeightsOut in cpp/bindings/engine.hpp.
Module['attnscopeCopyCausalRows'] = function (dst, src, at, first, nK) {
  for (let r = 0, o = 0; o < src.length; r++, o += nK) dst.set(src.subarray(o, o + Math.min(nK, first + r + 1)), at + o);
};
