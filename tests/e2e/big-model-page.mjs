// Runs big-model-worker.mjs (with this page's query) and puts its report in the title, for the browser test to read.
const worker = new Worker(new URL(`./big-model-worker.mjs${location.search}`, import.meta.url), { type: 'module' });
worker.onmessage = (event) => (document.title = JSON.stringify(event.data));
worker.onerror = (event) => (document.title = JSON.stringify({ error: event.message }));
