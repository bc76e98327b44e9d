// Appended inside the Emscripten factory (--post-js), where PThread is in scope.
// The package uses these to stop this instance's pthread Web Workers on
// dispose(), and in Node to keep idle workers from holding the process open.
Module['attnscopeWorkers'] = function () {
  return typeof PThread === 'undefined' ? [] : PThread.unusedWorkers.concat(PThread.runningWorkers);
};
Module['attnscopeTerminateWorkers'] = function () {
  if (typeof PThread !== 'undefined') PThread.terminateAllThreads();
};
