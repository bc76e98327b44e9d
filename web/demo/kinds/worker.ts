// The worker's part of each kind (kind.ts), chosen from the model's info.
import type { ModelInfo } from 'attnscope';

import { imageWorker } from './image.js';
import { kindOf, type WorkerKind } from './kind.js';
import { pairWorker } from './pair.js';
import { speechWorker } from './speech.js';
import { textWorker } from './text.js';

const KINDS = { text: textWorker, pair: pairWorker, image: imageWorker, speech: speechWorker } as const;

export const workerKind = (info: Pick<ModelInfo, 'input' | 'stacks'>): WorkerKind => KINDS[kindOf(info)];
