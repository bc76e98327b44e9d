// The page's part of each kind (kind.ts), chosen from the model's info.
import type { ModelInfo } from 'attnscope';

import { imagePage } from './image.js';
import { kindOf, type KindId, type PageKind } from './kind.js';
import { pairPage } from './pair.js';
import { speechPage } from './speech.js';
import { textPage } from './text.js';

const KINDS = { text: textPage, pair: pairPage, image: imagePage, speech: speechPage } as const;

export const pageKind = (info: Pick<ModelInfo, 'input' | 'stacks'>): PageKind => KINDS[kindOf(info)];

/** The kind of the model loaded, or null before one has. */
export const kindIn = (s: { model: Pick<ModelInfo, 'input' | 'stacks'> | null }): KindId | null =>
  s.model ? kindOf(s.model) : null;
