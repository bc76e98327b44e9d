import { createEngine } from 'attnscope'; // in Node the default model needs no import: its files are read from the package
const engine = await createEngine();
const model = await engine.loadModel('default');
const run = model.run('The cat sat on the mat.');
console.log(run.tokens, run.shape, engine.info().reason);
